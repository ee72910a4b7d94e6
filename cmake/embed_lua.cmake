# SPDX-License-Identifier: MIT
# Run as `cmake -DOUT=file.c -DNAMES="a;b" -DALONE="c" -DDIR=lua/ -P embed_lua.cmake`:
# writes OUT, a C file that defines, for each NAME, the script
# breaker__redis_lua_NAME: the constants (BREAKER__LUA_CONSTANTS, from
# scripts.h), DIR/prelude.lua, then DIR/NAME.lua, as one string literal;
# and for each of ALONE, a script without the prelude: the constants, then
# DIR/NAME.lua (credit.lua, which reads a few fields of a state, not all).
# The .lua files are the only copy of the fleet's server half.
function(breaker_lua_literal path out_var)
  file(READ "${path}" text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  set(${out_var} "    \"${text}\"" PARENT_SCOPE)
endfunction()

breaker_lua_literal("${DIR}/prelude.lua" prelude)
set(c "/* Generated from the .lua files of ${DIR} by cmake/embed_lua.cmake: do not edit. */\n")
string(APPEND c "#include \"store/redis/scripts.h\"\n\n")
foreach(name IN LISTS NAMES)
  breaker_lua_literal("${DIR}/${name}.lua" body)
  string(APPEND c "const char breaker__redis_lua_${name}[] =\n    BREAKER__LUA_CONSTANTS\n${prelude}\n${body};\n\n")
endforeach()
foreach(name IN LISTS ALONE)
  breaker_lua_literal("${DIR}/${name}.lua" body)
  string(APPEND c "const char breaker__redis_lua_${name}[] =\n    BREAKER__LUA_CONSTANTS\n${body};\n\n")
endforeach()
file(WRITE "${OUT}.tmp" "${c}")
# Only a changed text rewrites the file (no rebuild for nothing).
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
