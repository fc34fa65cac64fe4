# package.cmake - CPack's Debian packages of an install (scripts/package.sh builds them from a
# CPU-only build with the prefix /usr; `cpack -G DEB` in any build dir works too):
#   libplexus0      the library (SONAME libplexus.so.0) and the engine's plugins (component runtime)
#   libplexus-dev   headers, the libplexus.so link, the CMake package, plexus.pc, docs (development)
#   plexus-tools    plexus-run, plexus-train, plexus-info, plexus-topo, plexus-bench,
#                   plexus-torchrun (tools)
#   python3-plexus  the NumPy binding, package `plexus` (python)
# Split as Debian splits a library: a program that links libplexus needs only libplexus0, a
# developer adds libplexus-dev, and the tools and the binding are separate choices. Each
# package's Depends on Debian's libraries comes from dpkg-shlibdeps (libfabric1, libucx0,
# libhwloc15, libssl3, libfmt9, libopenblas0, ...), plus the exact libplexus0 it was built with.
set(CPACK_PACKAGE_NAME plexus)
set(CPACK_PACKAGE_VENDOR "Plexus")
set(CPACK_PACKAGE_CONTACT "Plexus developers <plexus-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "topology-aware collective communication and parallel training")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime development tools python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libplexus.so.0 is in this build, not yet in any installed package: dpkg-shlibdeps looks here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libplexus0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)  # DEBIAN/shlibs: libplexus 0 libplexus0
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "Plexus collective library\n libplexus.so.0: NCCL-style communicators and collectives over libfabric, UCX and shared\n memory, with the C ABI of plexus/plexus.h, and the training engine's plugins.")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libplexus-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "Plexus collective library: development files\n Headers, find_package(Plexus) and pkg-config files, and documentation.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME plexus-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
# gnuplot draws plexus-train --plot; plexus-torchrun runs PyTorch programs.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "gnuplot-nox, python3-torch")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "Plexus launcher, trainer and benchmarks\n plexus-run (local launcher), plexus-train (GPT training with placement strings),\n plexus-bench (nccl-tests-style benchmarks), plexus-info, plexus-topo, plexus-torchrun.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-plexus)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.11), python3-numpy")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION
  "Plexus collective library: NumPy binding\n The Python package plexus: communicators and collectives on NumPy arrays over libplexus.so.0.")
include(CPack)
