# SPDX-License-Identifier: MIT
# The `breaker` command (tools/): simulation, replay, pictures, the command
# line's texts and exit codes, the documents' examples, the store commands.
# Its data files are in data/ here.

if(BREAKER_BUILD_TOOLS)
  # About 10 s optimised; under valgrind's memcheck (make valgrind, with
  # BREAKER_SIM_SEEDS=3) 135 s on an idle machine: the limit is a hang guard.
  breaker_add_test(test_simulate SOURCES tools/test_simulate.c LIBS breaker_tool TIMEOUT 300
    DEFINITIONS EXAMPLES_DIR="${PROJECT_SOURCE_DIR}/examples/scenarios")
  breaker_add_test(test_replay SOURCES tools/test_replay.c LIBS breaker_tool TIMEOUT 30
    DEFINITIONS TEST_DATA_DIR="${CMAKE_CURRENT_LIST_DIR}/data")
  breaker_add_test(test_svg SOURCES tools/test_svg.c LIBS breaker_tool TIMEOUT 60)

  # The command line itself: help texts, exit codes, determinism, the SVG.
  set(_bk $<TARGET_FILE:breaker_cli>)
  set(_data ${CMAKE_CURRENT_LIST_DIR}/data)
  add_test(NAME tools_cli_help COMMAND ${_bk} --help)
  set_tests_properties(tools_cli_help PROPERTIES
    PASS_REGULAR_EXPRESSION "usage: breaker <command>.*simulate.*replay.*keys")
  add_test(NAME tools_cli_simulate_help COMMAND ${_bk} simulate --help)
  set_tests_properties(tools_cli_simulate_help PROPERTIES
    PASS_REGULAR_EXPRESSION "usage: breaker simulate.*--svg FILE.*--print-scenario")
  add_test(NAME tools_cli_replay_help COMMAND ${_bk} replay --help)
  set_tests_properties(tools_cli_replay_help PROPERTIES
    PASS_REGULAR_EXPRESSION "usage: breaker replay.*timestamp,duration,outcome.*--svg FILE")
  add_test(NAME tools_cli_keys COMMAND ${_bk} help keys)
  set_tests_properties(tools_cli_keys PROPERTIES
    PASS_REGULAR_EXPRESSION "half_open_max_probes.*probe_timeout.*cancelled_as")
  add_test(NAME tools_cli_usage_errors_exit_64 COMMAND sh -c
    "\"$0\" frobnicate 2>/dev/null; [ $? -eq 64 ] || exit 1
     \"$0\" simulate --bogus 2>/dev/null; [ $? -eq 64 ] || exit 1
     \"$0\" simulate -b 'x:failure_rate=2' 2>&1 | grep -q 'failure_rate: expected a rate'"
    ${_bk})
  add_test(NAME tools_cli_simulate_is_deterministic COMMAND sh -c
    "a=$(\"$0\" simulate) && b=$(\"$0\" simulate) && [ \"$a\" = \"$b\" ] &&
     echo \"$a\" | grep -q 'failed slowly: waited for the timeout'"
    ${_bk})
  add_test(NAME tools_cli_print_scenario_round_trips COMMAND sh -c
    "f=$(mktemp) && \"$0\" simulate --print-scenario > $f &&
     a=$(\"$0\" simulate \"$f\") && b=$(\"$0\" simulate) && rm -f $f && [ \"$a\" = \"$b\" ]"
    ${_bk})
  # The shipped abusive-caller scenario (docs/cli.md): the defaults refuse
  # legitimate callers, min_failing_sources = 3 none.
  add_test(NAME tools_cli_simulate_abusive_caller COMMAND sh -c
    "out=$(\"$0\" simulate \"$1/abusive_caller.ini\") &&
     echo \"$out\" | grep -q '^  ...from the abusive caller' &&
     echo \"$out\" | grep -q '^  unprotected: [1-9][0-9]* legitimate requests refused' &&
     echo \"$out\" | grep -q '^  defaults: 0 legitimate requests refused' &&
     echo \"$out\" | grep -q '^  defaults + 3 sources: 0 legitimate requests refused'"
    ${_bk} ${PROJECT_SOURCE_DIR}/examples/scenarios)
  # The shipped fleet scenario (docs/cli.md): at every recovery round the
  # fleet store has one probe in flight, the ten local breakers several; in
  # the fleet run every probe held a lease (probes in all = leases); its
  # picture is well-formed.
  add_test(NAME tools_cli_simulate_fleet COMMAND sh -c
    "d=$(mktemp -d) && out=$(\"$0\" simulate --svg $d/f.svg \"$1/fleet.ini\" 2>&1); rc=$?
     if [ $rc -ne 0 ]; then echo \"$out\"; rm -rf $d; exit 1; fi
     echo \"$out\" | grep -q '^  round  in flight   probes      dead  in flight   probes      dead$' &&
     echo \"$out\" | grep -Eq '^ +1 +10 +10 +10 +1 +1 +1$' &&
     ! echo \"$out\" | grep -E '^ +[0-9]+ ' | awk '$5 != \"-\" && $5 > 1 { bad = 1 } END { exit !bad }' &&
     echo \"$out\" | grep -q ' fleet trips 1, ' &&
     p=$(echo \"$out\" | sed -n 's/^  fleet store: .*; \\([0-9]*\\) probes in all$/\\1/p') &&
     l=$(echo \"$out\" | sed -n 's/.*fleet trips .*, leases \\([0-9]*\\);.*/\\1/p') &&
     [ -n \"$p\" ] && [ \"$p\" = \"$l\" ] &&
     xmllint --noout $d/f.svg; rc=$?; rm -rf $d; exit $rc"
    ${_bk} ${PROJECT_SOURCE_DIR}/examples/scenarios)
  # issue 25's scenarios. Shadow mode: the shadow run refuses nothing and
  # would have refused exactly what the enforcing run refused (the same
  # machine on the same requests), some of which the dependency served.
  add_test(NAME tools_cli_simulate_shadow COMMAND sh -c
    "out=$(\"$0\" simulate --no-baseline \"$1/shadow.ini\") || exit 1
     refused=$(echo \"$out\" | awk '/^failed fast: refused by the breaker/ { print $(NF-1), $NF }')
     would=$(echo \"$out\" | awk '/^shadow: would have refused/ { print $(NF-1), $NF }')
     served=$(echo \"$out\" | awk '/^  ...of which the dependency served/ { print $NF }')
     set -- $refused; e=$1; z=$2; set -- $would
     [ \"$z\" = 0 ] && [ \"$1\" = - ] && [ \"$2\" = \"$e\" ] && [ \"$e\" -gt 0 ] &&
     [ \"$served\" -gt 0 ] && [ \"$served\" -lt \"$e\" ] || { echo \"$out\"; exit 1; }"
    ${_bk} ${PROJECT_SOURCE_DIR}/examples/scenarios)
  # A dependency answering 429 with Retry-After to a fleet of 10: ignored,
  # every host keeps calling into it; directed, each host waits what it was
  # told, so the API sees a hundredth of the calls or fewer. Through the
  # fleet store one host's 429 keeps the others away: 2m of shedding with a
  # 20s Retry-After is 6 waves, so hosts that each learn on their own send
  # at least 6 x 10 = 60 (the local run), and the fleet's must stay at half
  # that or fewer (numbers: ignores local, fleet; directed local, fleet).
  add_test(NAME tools_cli_simulate_retry_after COMMAND sh -c
    "out=$(\"$0\" simulate \"$1/retry_after.ini\") || exit 1
     n=$(echo \"$out\" | sed -n 's/^ *answered 429 with Retry-After: \\([0-9]*\\) calls.*/\\1/p' | tr '\\n' ' ')
     set -- $n; [ $# -eq 4 ] && [ \"$1\" -gt 0 ] && [ $(($3 * 100)) -le \"$1\" ] &&
       [ \"$3\" -ge 60 ] && [ \"$4\" -gt 0 ] && [ $(($4 * 2)) -le 60 ] ||
       { echo \"$out\"; exit 1; }"
    ${_bk} ${PROJECT_SOURCE_DIR}/examples/scenarios)
  # examples/shadow_log writes a shadow log, shipped as
  # examples/shadow_log.csv (docs/cli.md replays it). The configuration that
  # wrote it (its second line) agrees with it on every call; with a longer
  # wait it does not, and says where first.
  if(BREAKER_BUILD_EXAMPLES)
    add_test(NAME tools_cli_shadow_log_replays_in_agreement COMMAND sh -c
      "d=$(mktemp -d) && \"$1\" >$d/log.csv 2>/dev/null || { rm -rf $d; exit 1; }
       cmp $d/log.csv \"$2/shadow_log.csv\" ||
         { echo 'examples/shadow_log.csv differs from what examples/shadow_log writes'; rm -rf $d; exit 1; }
       spec=$(sed -n '2s/^# //p' $d/log.csv)
       out=$(\"$0\" replay -b \"same:$spec\" -b \"longer:$spec,open=15s\" $d/log.csv); rc=$?; rm -rf $d
       [ $rc -eq 0 ] &&
       echo \"$out\" | grep -q '^Shadow log: the shadow breaker would have refused [1-9][0-9]* of 2400 calls' &&
       echo \"$out\" | grep -q '^   shadow log: 2400 of 2400 calls agree (100.0%)' &&
       echo \"$out\" | grep -q '^   first disagreement: line [0-9]* at ' || { echo \"$out\"; exit 1; }"
      ${_bk} $<TARGET_FILE:shadow_log> ${PROJECT_SOURCE_DIR}/examples)
    set_tests_properties(tools_cli_shadow_log_replays_in_agreement PROPERTIES LABELS cli)
  endif()
  add_test(NAME tools_cli_replay_malformed_exits_65 COMMAND sh -c
    "out=$(\"$0\" replay \"$1/malformed.csv\" 2>&1); [ $? -eq 65 ] &&
     echo \"$out\" | grep -q 'malformed.csv:10: bad outcome' &&
     echo \"$out\" | grep -q '8 malformed lines skipped'"
    ${_bk} ${_data})
  add_test(NAME tools_cli_svg_is_well_formed COMMAND sh -c
    "d=$(mktemp -d) && \"$0\" simulate --svg $d/s.svg >/dev/null &&
     \"$0\" replay --svg $d/r.svg -b 'a:trip=consecutive' \"$1/outage.csv\" >/dev/null &&
     xmllint --noout $d/s.svg $d/r.svg; rc=$?; rm -rf $d; exit $rc"
    ${_bk} ${_data})
  # Input that is too long, too many, hostile or empty (test_cli_input.sh):
  # refused with a message naming the limit, or taken whole; never cut,
  # dropped, or echoed with raw control bytes.
  foreach(_case long_set_key_is_refused_not_a_crash long_set_value_is_not_cut
          long_breaker_name_is_refused_with_the_limit long_ini_section_gives_one_configuration
          seventeenth_override_is_applied more_than_64_configurations_all_shown
          control_bytes_are_escaped empty_trace_is_said_and_can_fail
          mistyped_options_and_commands_suggest_the_closest every_message_has_the_command_prefix
          bad_values_say_the_accepted_formats messages_show_durations_for_people
          compound_durations_are_read_everywhere durations_need_a_unit_at_every_entry_point
          svg_dash_writes_the_picture_to_standard_output
          help_ends_with_the_manual_line replay_header_units_are_honoured_or_refused
          replay_json_summary replay_gates_exit_3 replay_caller_column_feeds_min_failing_sources)
    add_test(NAME tools_cli_${_case}
      COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/test_cli_input.sh ${_case} ${_bk} ${_data})
    set_tests_properties(tools_cli_${_case} PROPERTIES TIMEOUT 120 LABELS cli)
  endforeach()
  # The exit statuses of every command (cli_exit_codes.sh, breaker(1) EXIT
  # STATUS) and the messages behind them.
  foreach(_case usage_errors_are_64_in_every_command configuration_errors_are_78_in_every_command
          missing_inputs_are_66 bad_data_output_and_store_errors_have_their_own_codes
          exec_keeps_75_124_127_and_the_command_own open_alone_means_it huge_durations_saturate
          status_says_which_file_it_read help_paragraphs_end_with_a_newline
          store_file_permissions_are_74_not_77)
    add_test(NAME tools_cli_exit_${_case}
      COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_exit_codes.sh ${_case} ${_bk} ${_data})
    set_tests_properties(tools_cli_exit_${_case} PROPERTIES TIMEOUT 60 LABELS cli)
  endforeach()
  # The examples of README.md and docs/cli.md, read from them at test time
  # and run (cli_doc_examples.sh); a shown output must still be printed.
  foreach(_case crontab_example_stops_after_three_failures readme_fleet_table_is_what_simulate_prints
          readme_demo_table_is_what_make_demo_prints cli_comparison_table_figures_are_what_simulate_prints
          readme_lists_every_optional_dependency
          cli_shown_outputs_are_what_the_commands_print cli_quick_start_runs
          cli_script_example_says_what_happened cli_prometheus_crontab_writes_the_file)
    add_test(NAME tools_doc_${_case}
      COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_doc_examples.sh ${_case} ${_bk} ${PROJECT_SOURCE_DIR})
    set_tests_properties(tools_doc_${_case} PROPERTIES TIMEOUT 120 LABELS "cli;docs")
  endforeach()
  # A build without the fleet store (hiredis not found): every command that
  # takes --redis says so and exits 69 (label "without": the tests that only a
  # build without an optional dependency has, which scripts/optional-deps.sh
  # runs on each of its builds).
  if(NOT TARGET breaker_redis)
    add_test(NAME tools_cli_redis_options_say_the_build_has_no_fleet_store COMMAND sh -c
      "d=$(mktemp -d) && cd $d || exit 1
       for c in 'exec x --redis 127.0.0.1 -- true' 'open x --redis 127.0.0.1' 'config x --redis 127.0.0.1'; do
         out=$(\"$0\" $c 2>&1); rc=$?
         [ $rc -eq 69 ] && echo \"$out\" | grep -q 'built without the fleet store (hiredis' ||
           { echo \"breaker $c: exit $rc: $out\"; rm -rf $d; exit 1; }
       done; rm -rf $d"
      ${_bk})
    set_tests_properties(tools_cli_redis_options_say_the_build_has_no_fleet_store PROPERTIES
      TIMEOUT 60 LABELS "cli;without")
  endif()
  # A build without the in-process Redis (Lua 5.1 or hiredis not found):
  # simulate's fleet scenarios say which they cannot run, and why (exit 69);
  # its other scenarios run.
  if(NOT TARGET breaker_redis_inproc)
    add_test(NAME tools_cli_simulate_says_it_cannot_run_fleet_scenarios COMMAND sh -c
      "out=$(\"$0\" simulate \"$1/examples/scenarios/fleet.ini\" 2>&1); rc=$?
       [ $rc -eq 69 ] && echo \"$out\" | grep -q 'cannot run fleet scenarios' ||
         { echo \"simulate fleet.ini: exit $rc: $out\"; exit 1; }
       \"$0\" simulate \"$1/examples/scenarios/flaky.ini\" >/dev/null"
      ${_bk} ${PROJECT_SOURCE_DIR})
    set_tests_properties(tools_cli_simulate_says_it_cannot_run_fleet_scenarios PROPERTIES
      TIMEOUT 60 LABELS "cli;without")
  endif()
  # exec, status, ls, open, close, reset with real processes on a store file.
  add_test(NAME tools_cli_store COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_store.sh ${_bk})
  set_tests_properties(tools_cli_store PROPERTIES TIMEOUT 60 LABELS cli)
  # What operators and supervisors see (cli_store_ops.sh): status
  # --prometheus (checked by promtool and against the library's exporter,
  # as test_ops_metric_sample prints it) and --watch, the signals exec
  # passes on, the default store directory's checks (skipped, 77, unless
  # root with unshare and setpriv: it mounts its own /run).
  find_program(BREAKER_PROMTOOL promtool)
  foreach(_case prometheus_passes_promtool prometheus_uses_the_library_names
          watch_sees_transitions_of_other_processes watch_stops_cleanly_on_signals
          watch_usage_errors exec_forwards_stop_signals_to_the_group
          exec_child_killed_by_signal_is_a_failure default_dir_must_be_private
          operator_opens_for_a_time_and_shadow_mode config_changes_the_limits_live
          status_shows_who_forced_and_why exec_gives_up_on_a_held_store_lock)
    if(_case STREQUAL "prometheus_passes_promtool" AND NOT BREAKER_PROMTOOL)
      breaker_missing_dependency_test(tools_cli_store_${_case}
        "promtool (Debian package prometheus)")
    else()
      add_test(NAME tools_cli_store_${_case}
        COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_store_ops.sh ${_case} ${_bk}
                "${BREAKER_PROMTOOL}" $<TARGET_FILE:test_ops_metric_sample>)
    endif()
    set_tests_properties(tools_cli_store_${_case} PROPERTIES TIMEOUT 60 LABELS cli
      SKIP_RETURN_CODE 77)
  endforeach()
endif()
