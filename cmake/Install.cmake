# Install rules, in four components:
#   client  the scuda command and the client libraries (the scuda-client .deb)
#   server  the systemd unit and its settings file (the scuda-server .deb)
#   plugin  the Kubernetes device plugin, where gRPC is found (the
#           scuda-device-plugin .deb)
#   python  the same command and libraries inside the wheel's scuda package
# `scuda run` finds the libraries in ../lib beside its executable, so each
# layout keeps bin/ and lib/ side by side in a folder of their own. The
# libraries never go to a folder the dynamic loader searches by itself:
# there a libcuda.so.1 would replace the machine's own driver.
set(SCUDA_PRIVATE_DIR lib/scuda)

install(TARGETS scuda RUNTIME DESTINATION ${SCUDA_PRIVATE_DIR}/bin COMPONENT client)
install(TARGETS cuda nvidia-ml LIBRARY DESTINATION ${SCUDA_PRIVATE_DIR}/lib
        COMPONENT client NAMELINK_SKIP)
# libscuda.so is the name `scuda run` preloads; bin/scuda puts the command
# on PATH.
install(CODE "
  set(root \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  file(MAKE_DIRECTORY \"\${root}/bin\")
  file(CREATE_LINK libcuda.so.1 \"\${root}/${SCUDA_PRIVATE_DIR}/lib/libscuda.so\" SYMBOLIC)
  file(CREATE_LINK ../${SCUDA_PRIVATE_DIR}/bin/scuda \"\${root}/bin/scuda\" SYMBOLIC)"
  COMPONENT client)

# Slurm's Prolog, Epilog and TaskProlog for the CPU nodes (packaging/slurm),
# whose default lib_dir is this package's lib/.
install(PROGRAMS ${CMAKE_SOURCE_DIR}/packaging/slurm/scuda-slurm
        DESTINATION ${SCUDA_PRIVATE_DIR}/slurm COMPONENT client)

if(TARGET scuda-device-plugin)
  install(TARGETS scuda-device-plugin RUNTIME DESTINATION bin COMPONENT plugin)
endif()

install(FILES ${CMAKE_SOURCE_DIR}/packaging/systemd/scuda-server.service
        DESTINATION lib/systemd/system COMPONENT server)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/systemd/scuda-server.env
        DESTINATION /etc/default RENAME scuda-server COMPONENT server)

# The wheel: scikit-build-core installs this component into site-packages,
# where packaging/python/scuda/__init__.py runs scuda/bin/scuda.
install(TARGETS scuda RUNTIME DESTINATION scuda/bin COMPONENT python)
install(TARGETS cuda nvidia-ml LIBRARY DESTINATION scuda/lib COMPONENT python NAMELINK_SKIP)
