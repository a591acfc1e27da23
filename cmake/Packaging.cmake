# CPack: Debian packages, built with `cpack -G DEB` in a build folder.
#   scuda-client         the scuda command and the client libraries (/usr/lib/scuda)
#   scuda-server         the systemd unit; the command comes from scuda-client
#   scuda-device-plugin  the Kubernetes device plugin (where gRPC is found);
#                        the libraries it hands out come from scuda-client
# dpkg-shlibdeps, where the machine has it, names the Debian libraries the
# binaries link (libc6, libstdc++6, libgcc-s1) as dependencies.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME scuda)
set(CPACK_PACKAGE_VENDOR scuda)
set(CPACK_PACKAGE_CONTACT "scuda maintainers <scuda@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU over IP: CUDA programs run on a GPU of another machine")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL client server)
if(TARGET scuda-device-plugin)
  list(APPEND CPACK_COMPONENTS_ALL plugin)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME scuda-client)
set(CPACK_COMPONENT_CLIENT_DESCRIPTION
    "The scuda command (scuda run, status, server) and the client libraries that stand in for libcuda.so.1 and libnvidia-ml.so.1")
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME scuda-server)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "The scuda-server systemd service, which serves this machine's GPUs to scuda clients")
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "scuda-client (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME scuda-device-plugin)
set(CPACK_COMPONENT_PLUGIN_DESCRIPTION
    "The Kubernetes device plugin that advertises a pool of scuda servers' GPUs as scuda.dev/gpu on CPU nodes")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "scuda-client (= ${PROJECT_VERSION})")
# /etc/default/scuda-server is the administrator's: an upgrade keeps it.
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/deb/conffiles)

find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  # libnvidia-ml.so.1 links the package's own libcuda.so.1.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS usr/${SCUDA_PRIVATE_DIR}/lib)
endif()
include(CPack)
