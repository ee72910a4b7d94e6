# Tests of issue 6: configuration as text and the `breaker` command.
breaker_add_test(test_config_text SOURCES test_config_text.c TIMEOUT 30)
