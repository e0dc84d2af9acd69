from denpex.cli.main import main

raise SystemExit(main())
