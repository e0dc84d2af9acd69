CMake Warning at third_party/gloo/cmake/Dependencies.cmake:133 (message):
  Not compiling with NCCL support.  Suppress this warning with
  -DUSE_NCCL=OFF.
Call Stack (most recent call first):
  third_party/gloo/CMakeLists.txt:111 (include)


Generated: /users/zhu/pytorch/build/third_party/onnx/onnx/onnx_onnx_torch-ml.proto
Generated: /users/zhu/pytorch/build/third_party/onnx/onnx/onnx-operators_onnx_torch-ml.proto
Generated: /users/zhu/pytorch/build/third_party/onnx/onnx/onnx-data_onnx_torch.proto
disabling ROCM because NOT USE_ROCM is set
-- Will build oneDNN Graph
CMake Warning (dev) at /apps/ault/spack/opt/spack/linux-centos8-zen/gcc-8.4.1/cmake-3.21.3-zt24jfeuemvwweacziyho6ccdsdn2w4s/share/cmake-3.21/Modules/FindPackageHandleStandardArgs.cmake:438 (message):
  The package name passed to `find_package_handle_standard_args` (OpenMP_C)
  does not match the name of the calling package (OpenMP).  This can lead to
  problems in calling code that expects `find_package` result variables
  (e.g., `_FOUND`) to follow a certain pattern.
Call Stack (most recent call first):
  cmake/Modules/FindOpenMP.cmake:590 (find_package_handle_standard_args)
  third_party/ideep/mkl-dnn/cmake/OpenMP.cmake:55 (find_package)
  third_party/ideep/mkl-dnn/CMakeLists.txt:119 (include)
This warning is for project developers.  Use -Wno-dev to suppress it.

CMake Warning (dev) at /apps/ault/spack/opt/spack/linux-centos8-zen/gcc-8.4.1/cmake-3.21.3-zt24jfeuemvwweacziyho6ccdsdn2w4s/share/cmake-3.21/Modules/FindPackageHandleStandardArgs.cmake:438 (message):
  The package name passed to `find_package_handle_standard_args` (OpenMP_CXX)
  does not match the name of the calling package (OpenMP).  This can lead to
  problems in calling code that expects `find_package` result variables
  (e.g., `_FOUND`) to follow a certain pattern.
Call Stack (most recent call first):
  cmake/Modules/FindOpenMP.cmake:590 (find_package_handle_standard_args)
  third_party/ideep/mkl-dnn/cmake/OpenMP.cmake:55 (find_package)
  third_party/ideep/mkl-dnn/CMakeLists.txt:119 (include)
This warning is for project developers.  Use -Wno-dev to suppress it.

-- <FindZVECTOR>
-- ZVECTOR flags were NOT set.
-- </FindZVECTOR>
INFO ROCM_SOURCE_DIR = 
INFO CUPTI_INCLUDE_DIR = /apps/ault/spack/opt/spack/linux-centos8-zen/gcc-8.4.1/cuda-11.8.0-fjdnxm6yggxxp75sb62xrxxmeg4s24ml/extras/CUPTI/include
INFO ROCTRACER_INCLUDE_DIR = /include/roctracer
INFO DYNOLOG_INCLUDE_DIR = /users/zhu/pytorch/third_party/kineto/libkineto/third_party/dynolog/
INFO IPCFABRIC_INCLUDE_DIR = /users/zhu/pytorch/third_party/kineto/libkineto/third_party/dynolog//dynolog/src/ipcfabric/
   Target system: Linux-4.18.0-348.12.2.el8_5.x86_64
   Target processor: x86_64
   Host system: Linux-4.18.0-348.12.2.el8_5.x86_64
   Host processor: x86_64
   Detected C compiler: GNU @ /apps/ault/spack/opt/spack/linux-centos8-zen/gcc-8.4.1/gcc-10.2.0-fqf4ze2mfclmx6e7ehrjckznpoqnevmi/bin/gcc
   CMake: 3.21.3
   Make program: /apps/ault/spack/opt/spack/linux-centos8-zen/gcc-8.4.1/ninja-1.10.2-wdynop4omsowbsqvfv6gvco6dxqkdvgh/bin/ninja-build
AT_INSTALL_INCLUDE_DIR include/ATen/core
core header install: /users/zhu/pytorch/build/aten/src/ATen/core/TensorBody.h
core header install: /users/zhu/pytorch/build/aten/src/ATen/core/aten_interned_strings.h
core header install: /users/zhu/pytorch/build/aten/src/ATen/core/enum_tag.h
CMake Warning at CMakeLists.txt:1258 (message):
  Generated cmake files are only fully tested if one builds with system glog,
  gflags, and protobuf.  Other settings may generate files that are not well
  tested.


slurmstepd: error: *** JOB 500232 ON ault44 CANCELLED AT 2024-09-02T16:48:09 DUE TO TIME LIMIT ***
