/* SPDX-License-Identifier: MIT */
/*
 * test_svg.c - the SVG timelines are well-formed XML, checked by a real XML
 * parser (xmllint --noout), for simulate and replay runs and the fleet
 * scenario's rounds, including names with XML's special characters; and the
 * check itself can fail.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include "cli/cli.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/simulate.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/breaker-test-svg-XXXXXX";

static int setup(void **state) {
    (void)state;
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* @return xmllint's exit status for `path` (0 = well-formed). */
static int xmllint(const char *path) {
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "xmllint --noout '%s' 2>/dev/null", path);
    int status = system(cmd);
    if (status == -1 || !WIFEXITED(status)) fail_msg("cannot run xmllint");
    if (WEXITSTATUS(status) == 127) fail_msg("xmllint is not installed (libxml2-utils)");
    return WEXITSTATUS(status);
}

/* Read a file into a string (caller frees). */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, out);
    fclose(out);
    fclose(f);
    return buf;
}

static void write_svg(const char *path, const char *title, const struct tool_timeline *const *tls,
                      size_t n) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(tool_svg_write(f, title, tls, n), 0);
    assert_int_equal(fclose(f), 0);
}

static void simulate_timelines_are_well_formed_svg(void **state) {
    (void)state;
    struct tool_scenario sc;
    tool_scenario_init(&sc);
    char msg[TOOL_MSG_MAX];
    assert_int_equal(
        tool_load_scenario(NULL, tool_builtin_scenario, &sc, &sc.breakers, msg, sizeof(msg)), 0);
    assert_int_equal(tool_scenario_finish(&sc, msg, sizeof(msg)), 0);
    struct tool_sim_result runs[4];
    const struct tool_timeline *tls[4];
    assert_int_equal(tool_simulate(&sc, NULL, &runs[0], msg, sizeof(msg)), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(tool_simulate(&sc, &sc.breakers.items[i], &runs[i + 1], msg, sizeof(msg)),
                         0);
    for (size_t i = 0; i < 4; i++)
        tls[i] = &runs[i].timeline;
    char path[600];
    snprintf(path, sizeof(path), "%s/simulate.svg", dir);
    write_svg(path, "breaker simulate: database outage", tls, 4);
    assert_int_equal(xmllint(path), 0);

    char *svg = slurp(path);
    assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_non_null(strstr(svg, ">no breaker<"));
    assert_non_null(strstr(svg, ">unbounded probes<"));
    assert_non_null(strstr(svg, ">OPEN<"));   /* state written in its band */
    assert_non_null(strstr(svg, ">outage<")); /* phase named on the chart */
    assert_non_null(strstr(svg, "calls reaching the dependency /s"));
    assert_null(strstr(svg, "<script")); /* self-contained, static */
    assert_null(strstr(svg, "href="));   /* nothing external */
    free(svg);
    for (size_t i = 0; i < 4; i++)
        tool_sim_result_free(&runs[i]);
    tool_scenario_free(&sc);
}

static void replay_timelines_with_special_characters_are_well_formed(void **state) {
    (void)state;
    static const char text[] = "0.0,0.01,503\n0.1,0.01,503\n0.2,0.01,503\n1.5,0.01,200\n"
                               "2.0,0.01,200\n2.5,0.01,200\n9.0,0.2,ok\n";
    FILE *in = fmemopen((void *)(uintptr_t)text, sizeof(text) - 1, "r");
    struct tool_trace tr;
    char msg[TOOL_MSG_MAX];
    assert_int_equal(tool_trace_read(in, "t", stderr, &tr, msg, sizeof(msg)), 0);
    fclose(in);
    struct tool_breakers list = {0};
    assert_int_equal(tool_breakers_add_spec(&list,
                                            "<a & \"b\" 'c'>:trip=consecutive,"
                                            "failure_threshold=3,open=1s",
                                            "x", msg, sizeof(msg)),
                     0);
    struct tool_replay_result r;
    assert_int_equal(tool_replay(&tr, &list.items[0], &r, msg, sizeof(msg)), 0);
    const struct tool_timeline *tls[1] = {&r.timeline};
    char path[600];
    snprintf(path, sizeof(path), "%s/replay.svg", dir);
    write_svg(path, "replay of <trace> & more", tls, 1);
    assert_int_equal(xmllint(path), 0);
    char *svg = slurp(path);
    assert_non_null(strstr(svg, "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;"));
    free(svg);
    tool_replay_result_free(&r);
    tool_breakers_free(&list);
    tool_trace_free(&tr);
}

static void the_xml_check_rejects_a_truncated_picture(void **state) {
    (void)state;
    struct tool_timeline tl;
    assert_int_equal(tool_timeline_init(&tl, 0, 60 * TOOL_SEC, 0), 0);
    snprintf(tl.title, sizeof(tl.title), "empty");
    const struct tool_timeline *tls[1] = {&tl};
    char path[600];
    snprintf(path, sizeof(path), "%s/whole.svg", dir);
    write_svg(path, "empty", tls, 1);
    assert_int_equal(xmllint(path), 0);
    /* Cut the same picture short: the parser must say so. */
    char *svg = slurp(path);
    char cut[600];
    snprintf(cut, sizeof(cut), "%s/cut.svg", dir);
    FILE *f = fopen(cut, "w");
    assert_non_null(f);
    fwrite(svg, 1, strlen(svg) / 2, f);
    fclose(f);
    assert_true(xmllint(cut) != 0);
    free(svg);
    tool_timeline_free(&tl);
}

/* The fleet scenario's picture, from results made by hand (so it is checked
 * in every build, a shared libbreaker's too): well-formed, one bar per round
 * and run, the probe limit drawn, names escaped. */
static void the_fleet_picture_is_well_formed_svg(void **state) {
    (void)state;
    struct tool_fleet_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    snprintf(r->name, sizeof(r->name), "<one & only>");
    r->max_probes = 1;
    struct tool_fleet_run *runs[2] = {&r->local, &r->fleet};
    for (int i = 0; i < 2; i++) {
        runs[i]->fleet = i == 1;
        runs[i]->round_count = i == 0 ? 4 : 3;
        for (uint32_t k = 0; k < runs[i]->round_count; k++) {
            runs[i]->rounds[k].max_in_flight = i == 0 ? 10 - k : 1;
            runs[i]->rounds[k].probes = i == 0 ? 10 : 1;
            runs[i]->rounds[k].dead = k < 2 ? runs[i]->rounds[k].probes : 0;
        }
        assert_int_equal(tool_timeline_init(&runs[i]->timeline, 0, 60 * TOOL_SEC, 0), 0);
        snprintf(runs[i]->timeline.title, sizeof(runs[i]->timeline.title), "%s",
                 i == 0 ? "local" : "fleet");
        runs[i]->timeline.has_breaker = true;
        assert_int_equal(tool_timeline_state(&runs[i]->timeline, 0, BREAKER_CLOSED), 0);
    }
    char path[600];
    snprintf(path, sizeof(path), "%s/fleet.svg", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(tool_svg_write_fleet(f, "fleet <10 hosts>", r, 1), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(xmllint(path), 0);
    char *svg = slurp(path);
    assert_non_null(strstr(svg, ">probes in flight at once, all hosts together<"));
    assert_non_null(strstr(svg, ">probes that reached the dependency while it was down<"));
    assert_non_null(strstr(svg, ">half_open_max_probes<"));
    assert_non_null(strstr(svg, "&lt;one &amp; only&gt;: per recovery round"));
    /* Bars: 4 local and 3 fleet rounds in each of the two charts, less the
     * empty bars (height 0) still drawn: count the fills. */
    size_t local = 0, fleet = 0;
    for (const char *p = svg; (p = strstr(p, "fill=\"#ef6c00\"/>")) != NULL; p++)
        local++;
    for (const char *p = svg; (p = strstr(p, "fill=\"#1565c0\"/>")) != NULL; p++)
        fleet++;
    assert_int_equal(local, 2 * 4);
    assert_int_equal(fleet, 2 * 3);
    free(svg);
    tool_fleet_result_free(r);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(simulate_timelines_are_well_formed_svg),
        cmocka_unit_test(replay_timelines_with_special_characters_are_well_formed),
        cmocka_unit_test(the_xml_check_rejects_a_truncated_picture),
        cmocka_unit_test(the_fleet_picture_is_well_formed_svg),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
