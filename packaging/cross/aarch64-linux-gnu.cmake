# CMake toolchain for arm64 (aarch64) on an amd64 Debian machine: Debian's
# cross compilers (crossbuild-essential-arm64) and arm64 libraries installed
# by multiarch (dpkg --add-architecture arm64). packaging/cross/arm64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The arm64 -dev packages' architecture-specific headers (Debian's cross
# compiler searches /usr/include, not its multiarch directory).
set(CMAKE_C_FLAGS_INIT "-isystem /usr/include/aarch64-linux-gnu")
set(CMAKE_CXX_FLAGS_INIT "-isystem /usr/include/aarch64-linux-gnu")
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# Test programs run under qemu-user (CTest and catch_discover_tests too).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
