# CMake toolchain for arm64 (aarch64) on an amd64 Debian machine: Debian's
# cross compilers (crossbuild-essential-arm64) and arm64 libraries installed
# by multiarch (dpkg --add-architecture arm64). packaging/cross/arm64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# The multiarch headers and qemu-aarch64 for programs run at build time and
# for the tests: the top CMakeLists.txt, for every cross build.
