# SPDX-License-Identifier: MIT
# Run as `cmake -DOUT=file.c -DNAMES="a;b" -DDIR=lua/ -P embed_lua.cmake`:
# writes OUT, a C file that defines, for each NAME, the script
# breaker__redis_lua_NAME: the constants (BREAKER__LUA_CONSTANTS, from
# scripts.h), DIR/prelude.lua, then DIR/NAME.lua, as one string literal.
# A script with a cheap path (DIR/NAME_cheap.lua: the flush's) has it in
# the prelude where the prelude's marker line says, after Redis's clock is
# read and before the state is, so that the script still reads TIME once.
# The .lua files are the only copy of the fleet's server half.
function(breaker_lua_literal text out_var)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  set(${out_var} "    \"${text}\"" PARENT_SCOPE)
endfunction()

file(READ "${DIR}/prelude.lua" prelude_text)
set(marker "-- (here, with Redis's clock read, a script's cheap path: NAME_cheap.lua)\n")
string(FIND "${prelude_text}" "${marker}" at)
if(at LESS 0)
  message(FATAL_ERROR "${DIR}/prelude.lua: the cheap path's marker line is missing")
endif()
string(LENGTH "${marker}" marker_len)
math(EXPR after "${at} + ${marker_len}")
string(SUBSTRING "${prelude_text}" 0 ${after} prelude_head)
string(SUBSTRING "${prelude_text}" ${after} -1 prelude_tail)
breaker_lua_literal("${prelude_text}" prelude)
set(c "/* Generated from the .lua files of ${DIR} by cmake/embed_lua.cmake: do not edit. */\n")
string(APPEND c "#include \"store/redis/scripts.h\"\n\n")
foreach(name IN LISTS NAMES)
  file(READ "${DIR}/${name}.lua" body_text)
  breaker_lua_literal("${body_text}" body)
  set(text "${prelude}")
  if(EXISTS "${DIR}/${name}_cheap.lua")
    file(READ "${DIR}/${name}_cheap.lua" cheap)
    breaker_lua_literal("${prelude_head}${cheap}${prelude_tail}" text)
  endif()
  string(APPEND c "const char breaker__redis_lua_${name}[] =\n    BREAKER__LUA_CONSTANTS\n${text}\n${body};\n\n")
endforeach()
file(WRITE "${OUT}.tmp" "${c}")
# Only a changed text rewrites the file (no rebuild for nothing).
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
