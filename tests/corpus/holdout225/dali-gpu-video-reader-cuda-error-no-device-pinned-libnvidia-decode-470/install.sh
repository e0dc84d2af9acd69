apt-get update
apt-get install --yes libnvidia-compute-470=470.57.02-0ubuntu1
apt-get install --yes libnvidia-decode-470=470.57.02-0ubuntu1
pip install --extra-index-url https://developer.download.nvidia.com/compute/redist --upgrade nvidia-dali-cuda110
