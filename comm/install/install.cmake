# install.cmake - what `cmake --install` lays out for libplexus and its users, beside the
# install(TARGETS) rules of the tools (component "tools", the default) and the plugins:
#   include/plexus/*.h                               development
#   <libdir>/libplexus.so.0.1.0, libplexus.so.0      runtime (the SONAME link)
#   <libdir>/libplexus.so                            development (the link a linker looks for)
#   <libdir>/plexus/plugins/libplexus_plugin_*.so    runtime (plugins/CMakeLists.txt)
#   <libdir>/cmake/Plexus/PlexusConfig*.cmake        development: find_package(Plexus), which
#                                                    gives the imported target Plexus::plexus
#   <libdir>/pkgconfig/plexus.pc                     development: pkg-config plexus
#   share/doc/plexus/                                development: README.md and docs/
# Every path is relative to the prefix, so an install can be moved (or unpacked from a .deb
# into any root) and still be found: the CMake package computes its prefix from its own place,
# the .pc file through ${pcfiledir}.
include(CMakePackageConfigHelpers)

install(TARGETS plexus EXPORT PlexusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/plexus/plexus.h ${PROJECT_SOURCE_DIR}/include/plexus/plugin.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/plexus COMPONENT development)

set(PLEXUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Plexus)
install(EXPORT PlexusTargets NAMESPACE Plexus:: DESTINATION ${PLEXUS_CMAKE_DIR}
  COMPONENT development)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/PlexusConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/PlexusConfig.cmake INSTALL_DESTINATION ${PLEXUS_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR PLEXUS_PLUGIN_INSTALL_DIR)
# The C ABI keeps its symbols within a major version (0.x: within the minor one, as long as the
# project is below 1.0): SameMinorVersion until 1.0, SameMajorVersion after.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(plexus_compatibility SameMinorVersion)
else()
  set(plexus_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/PlexusConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${plexus_compatibility})
install(FILES ${CMAKE_BINARY_DIR}/install/PlexusConfig.cmake
              ${CMAKE_BINARY_DIR}/install/PlexusConfigVersion.cmake
  DESTINATION ${PLEXUS_CMAKE_DIR} COMPONENT development)

# plexus.pc: prefix found from the file's own folder (<prefix>/<libdir>/pkgconfig): the way up
# from <libdir>/pkgconfig to the prefix, "../.." or "../../.." ("/prefix" stands for any prefix).
file(RELATIVE_PATH plexus_pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" plexus_pc_to_prefix "${plexus_pc_to_prefix}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/plexus.pc.in ${CMAKE_BINARY_DIR}/install/plexus.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/plexus.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/plexus
  COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/plexus
  COMPONENT development)
