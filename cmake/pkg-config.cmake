# SPDX-License-Identifier: MIT
# pkg-config files: one per installed library (included from the top-level
# CMakeLists.txt, after the libraries are declared).
#
#   breaker.pc         libbreaker
#   breaker-redis.pc   libbreaker_redis (when built: hiredis found)
#   breaker-curl.pc    libbreaker_curl (libcurl found)
#   breaker-pq.pc      libbreaker_pq (libpq found)
#
# Where the files point. BREAKER_PC_RELOCATABLE (ON, the default): each finds
# its prefix from its own place (${pcfiledir}), so an install tree stays
# correct wherever it is copied or whatever --prefix it got (cmake --install).
# OFF: the plain configured paths, as a distribution's packages install them
# (debian/rules), so that pkg-config recognises /usr/include and the
# multiarch library directory as the system's and prints neither.
#
# What a link needs. A static library needs its dependencies on every link
# line: Libs (the system libraries) and Requires (hiredis, libcurl, libpq);
# a shared one carries them itself, so they are only for
# `pkg-config --static` (Libs.private, Requires.private). The integrations
# require breaker itself publicly: their headers include breaker.h and
# their users call its functions.
option(BREAKER_PC_RELOCATABLE "pkg-config files relative to their own place (else plain paths)" ON)
if(NOT BREAKER_PC_RELOCATABLE OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}"
   OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(BREAKER_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(BREAKER_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(BREAKER_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
  if(NOT IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(BREAKER_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(NOT IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(BREAKER_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
else()
  file(RELATIVE_PATH _pc_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
  set(BREAKER_PC_PREFIX "\${pcfiledir}/${_pc_up}")
  set(BREAKER_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(BREAKER_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# breaker_pc(FILE NAME DESCRIPTION LIB [REQUIRES module] [LIBS flags]):
# FILE.pc for the library LIB, which needs the pkg-config module REQUIRES
# and the linker flags LIBS.
function(breaker_pc file description lib)
  cmake_parse_arguments(PC "" "" "REQUIRES;LIBS" ${ARGN})
  set(BREAKER_PC_NAME ${file})
  set(BREAKER_PC_DESCRIPTION "${description}")
  set(BREAKER_PC_LIB ${lib})
  set(BREAKER_PC_REQUIRES "")
  set(BREAKER_PC_REQUIRES_PRIVATE "")
  set(BREAKER_PC_LIBS_PUBLIC "")
  set(BREAKER_PC_LIBS_PRIVATE "")
  string(JOIN " " _libs ${PC_LIBS})
  string(JOIN ", " _requires ${PC_REQUIRES})
  if(NOT file STREQUAL "breaker")
    set(BREAKER_PC_REQUIRES "breaker = ${PROJECT_VERSION}")
  endif()
  if(BUILD_SHARED_LIBS)
    set(BREAKER_PC_REQUIRES_PRIVATE "${_requires}")
    set(BREAKER_PC_LIBS_PRIVATE "${_libs}")
  else()
    if(_requires)
      string(JOIN ", " BREAKER_PC_REQUIRES ${BREAKER_PC_REQUIRES} ${_requires})
    endif()
    if(_libs)
      set(BREAKER_PC_LIBS_PUBLIC " ${_libs}")
    endif()
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/breaker.pc.in ${PROJECT_BINARY_DIR}/${file}.pc.tmp @ONLY)
  # Fields left empty ("Requires: ") are left out.
  file(READ ${PROJECT_BINARY_DIR}/${file}.pc.tmp _pc)
  string(REGEX REPLACE "\n[A-Za-z.]+: *\n" "\n" _pc "${_pc}")
  string(REGEX REPLACE "\n[A-Za-z.]+: *\n" "\n" _pc "${_pc}")
  file(WRITE ${PROJECT_BINARY_DIR}/${file}.pc.tmp "${_pc}")
  configure_file(${PROJECT_BINARY_DIR}/${file}.pc.tmp ${PROJECT_BINARY_DIR}/${file}.pc COPYONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${file}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()

set(_pc_system -lpthread -lm)
if(CMAKE_DL_LIBS)
  list(APPEND _pc_system -l${CMAKE_DL_LIBS})
endif()
breaker_pc(breaker "A thread-safe, lock-free circuit breaker for C" breaker LIBS ${_pc_system})
if(TARGET breaker_redis)
  breaker_pc(breaker-redis "The breaker fleet store: breakers shared by hosts through Redis"
    breaker_redis REQUIRES hiredis)
endif()
if(TARGET breaker_curl)
  breaker_pc(breaker-curl "A circuit breaker in front of libcurl transfers" breaker_curl
    REQUIRES libcurl)
endif()
if(TARGET breaker_pq)
  breaker_pc(breaker-pq "A circuit breaker in front of libpq connections and queries" breaker_pq
    REQUIRES libpq)
endif()
