# Tests of issue 6: configuration as text and the `breaker` command.
breaker_add_test(test_config_text SOURCES test_config_text.c TIMEOUT 30)

if(BREAKER_BUILD_TOOLS)
  breaker_add_test(test_simulate SOURCES test_simulate.c LIBS breaker_tool TIMEOUT 60)
endif()
