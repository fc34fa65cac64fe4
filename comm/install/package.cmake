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
# Each package's Description: the first line of CPACK_DEBIAN_<COMPONENT>_DESCRIPTION is its
# synopsis (no CPACK_PACKAGE_DESCRIPTION_SUMMARY, which CPack would put before every one).
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
# DEBIAN/shlibs of libplexus0 ("libplexus 0 libplexus0 (>= 0.1.0)"), so that dpkg-shlibdeps of
# a downstream package that links -lplexus finds its dependency; only libplexus has a SONAME.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_STRIP_FILES ON)  # Debian ships stripped binaries

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libplexus0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "topology-aware collective communication library\nlibplexus.so.0: NCCL-style communicators and collectives over libfabric, UCX and shared\nmemory, with the C ABI of plexus/plexus.h, and the training engine's plugins.")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libplexus-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION
  "topology-aware collective communication library - development files\nHeaders, find_package(Plexus) and pkg-config files, and documentation.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME plexus-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
# plexus-torchrun is a Python script; gnuplot draws plexus-train --plot, and plexus-torchrun
# runs PyTorch programs.
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "gnuplot-nox, python3-torch")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "Plexus launcher, GPT trainer and collective benchmarks\nplexus-run (local launcher), plexus-train (GPT training with placement strings),\nplexus-bench (nccl-tests-style benchmarks), plexus-info, plexus-topo, plexus-torchrun.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-plexus)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.11), python3-numpy")
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)  # Python files only; libplexus0 is the binary
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
  "topology-aware collective communication library - NumPy binding\nThe Python package plexus: communicators and collectives on NumPy arrays over libplexus.so.0.")
include(CPack)
