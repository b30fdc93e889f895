# SPDX-License-Identifier: MIT
#
# Installing and packaging mcplex. `cmake --install BUILD [--prefix P]` puts
# the binary in P/bin, the systemd user unit in P/lib/systemd/user, the man
# page in P/share/man/man1 and the README with the example configs in
# P/share/doc/mcplex. `cpack -G DEB` (from the build directory) makes a
# Debian 12 package of the same files under /usr. Nothing else (tests,
# sandbox-sim, benches) is installed. Included from the top-level
# CMakeLists.txt after every target is defined.
include(GNUInstallDirs)

install(TARGETS mcplex RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# systemd looks for user units in <prefix>/lib/systemd/user for /usr and
# /usr/local (systemd.unit(5)), not under a multiarch libdir.
install(FILES ${CMAKE_SOURCE_DIR}/examples/systemd/mcplex.service
        DESTINATION lib/systemd/user)

# Debian policy 12.1: man pages are installed compressed with gzip -9n
# (-n: no name or time stamp, so the file is the same on every build).
find_program(MX_GZIP gzip REQUIRED)
set(MX_MAN_GZ ${CMAKE_BINARY_DIR}/man/mcplex.1.gz)
add_custom_command(
  OUTPUT ${MX_MAN_GZ}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND sh -c "\"$0\" -9nc \"$1\" > \"$2\"" ${MX_GZIP}
          ${CMAKE_SOURCE_DIR}/examples/man/mcplex.1 ${MX_MAN_GZ}
  DEPENDS ${CMAKE_SOURCE_DIR}/examples/man/mcplex.1
  COMMENT "Compressing the man page"
  VERBATIM)
add_custom_target(mx_man ALL DEPENDS ${MX_MAN_GZ})
install(FILES ${MX_MAN_GZ} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/configs ${CMAKE_SOURCE_DIR}/examples/systemd
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
if(EXISTS ${CMAKE_SOURCE_DIR}/examples/clients)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/clients
          DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
endif()

# ---- CPack: the Debian package ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mcplex)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "local gateway for MCP servers that run in sandboxes")
set(CPACK_PACKAGE_DESCRIPTION
    "mcplex is one localhost endpoint for every MCP client on a machine. Behind it sit\n"
    "upstream MCP servers, each in its own sandbox with its own URL and credential.\n"
    "It keeps the upstream tokens in a vault and injects them, merges the tools of\n"
    "all upstreams, wakes paused sandboxes on use, and exports Prometheus metrics.\n"
    "Runs as a systemd user service: systemctl --user enable --now mcplex")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(MX_PACKAGE_MAINTAINER "mcplex developers <mcplex@localhost>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_CONTACT "${MX_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${MX_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The libraries mcplex links (readelf -d: NEEDED), by their Debian 12 package
# names; lower bounds are the Debian 12 versions it is built and tested
# with. tests/package/deb.sh checks that every NEEDED library is covered.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.34), libcurl4 (>= 7.88.1), libev4 (>= 1:4.33), libhttp-parser2.9 (>= 2.9.4), libjansson4 (>= 2.14), libnghttp2-14 (>= 1.52.0), libssl3 (>= 3.0.0)")
# keyring: secrets load libsecret at run time, only when one is used.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libsecret-1-0")
# `make package_source` must not sweep up build trees or node_modules.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/node_modules/")
include(CPack)
