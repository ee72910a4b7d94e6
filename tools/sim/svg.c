/* SPDX-License-Identifier: MIT */
/*
 * svg.c - timelines as one self-contained SVG picture, one panel per run.
 *
 * Each panel, top to bottom: the run's name; the breaker's state as a
 * coloured band with the state written inside; calls per second (reaching
 * the dependency, refused by the breaker, failed, shed), each line labelled
 * in its own colour; response time p50 and p99 on a log scale with the
 * timeout marked. Scenario phases shade the background and are named at the
 * top, so the picture reads without a legend. No scripts, no external fonts
 * or styles: it opens in any browser and passes `xmllint --noout`.
 */
#include "sim/report.h"

#include "cli/cli.h"
#include "cli/parse.h"
#include "cli/text.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define WIDTH    1000.0
#define LEFT     70.0
#define RIGHT    20.0
#define PLOT_W   (WIDTH - LEFT - RIGHT)
#define TITLE_H  38.0
#define STATE_H  20.0
#define GAP      10.0
#define RATE_H   130.0
#define LAT_H    80.0
#define AXIS_H   28.0
#define PANEL_H  (TITLE_H + STATE_H + GAP + 16.0 + RATE_H + GAP + 16.0 + LAT_H + AXIS_H + 14.0)
#define HEADER_H 36.0

#define C_REACHED "#1565c0"
#define C_REFUSED "#7e57c2"
#define C_FAILED  "#d32f2f"
#define C_SHED    "#ef6c00"
#define C_P50     "#2e7d32"
#define C_P99     "#6d4c41"

static const char *state_color(enum breaker_state s) {
    switch (s) {
    case BREAKER_CLOSED:
        return "#43a047";
    case BREAKER_OPEN:
        return "#e53935";
    case BREAKER_HALF_OPEN:
        return "#fbc02d";
    case BREAKER_FORCED_OPEN:
        return "#8e24aa";
    case BREAKER_FORCED_CLOSED:
        return "#546e7a";
    }
    return "#9e9e9e";
}

static const char *state_label(enum breaker_state s) {
    switch (s) {
    case BREAKER_CLOSED:
        return "closed";
    case BREAKER_OPEN:
        return "OPEN";
    case BREAKER_HALF_OPEN:
        return "half-open";
    case BREAKER_FORCED_OPEN:
        return "forced open";
    case BREAKER_FORCED_CLOSED:
        return "forced closed";
    }
    return "?";
}

/* Text content with the five XML specials escaped. */
static void put_text(FILE *out, const char *s) {
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, out);
            break;
        }
    }
}

static void text(FILE *out, double x, double y, const char *anchor, const char *fill, int size,
                 const char *weight, const char *s) {
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\" font-size=\"%d\"%s%s%s>", x,
            y, anchor, fill, size, weight ? " font-weight=\"" : "", weight ? weight : "",
            weight ? "\"" : "");
    put_text(out, s);
    fputs("</text>\n", out);
}

struct panel {
    const struct tool_timeline *tl;
    double top;
    double span_ns;
};

static double x_of(const struct panel *p, uint64_t t) {
    double f = t <= p->tl->start_ns ? 0.0 : (double)(t - p->tl->start_ns) / p->span_ns;
    if (f > 1.0) f = 1.0;
    return LEFT + f * PLOT_W;
}

/* A round number >= v: 1, 2 or 5 times a power of ten. */
static double nice_ceil(double v) {
    if (v <= 1.0) return 1.0;
    double p = pow(10.0, floor(log10(v)));
    double m = v / p;
    return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * p;
}

static void time_axis(FILE *out, const struct panel *p, double y0, double y1) {
    double span_s = p->span_ns / 1e9;
    static const double steps[] = {0.001, 0.01, 0.1, 1,   5,    10,   15,    30,
                                   60,    120,  300, 600, 1800, 3600, 21600, 86400};
    double step = steps[sizeof(steps) / sizeof(steps[0]) - 1];
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (span_s / steps[i] <= 10.0) {
            step = steps[i];
            break;
        }
    }
    for (double s = 0.0; s <= span_s + 1e-9; s += step) {
        double x = LEFT + s / span_s * PLOT_W;
        char label[32];
        tool_format_duration((uint64_t)llround(s * 1e9), label, sizeof(label));
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
                x, y0, x, y1);
        text(out, x, y1 + 14.0, "middle", "#555", 11, NULL, label);
    }
}

static void phase_bands(FILE *out, const struct panel *p, double y0, double y1) {
    static const char *const fill[] = {"none", "#ffebee", "#fff8e1"};
    for (size_t i = 0; i < p->tl->band_count; i++) {
        const struct tool_band *b = &p->tl->bands[i];
        double x0 = x_of(p, b->from_ns), x1 = x_of(p, b->to_ns);
        if (b->shade > 0)
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                    x0, y0, x1 - x0, y1 - y0, fill[b->shade]);
        if (i > 0)
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bdbdbd\" "
                    "stroke-dasharray=\"3,3\"/>\n",
                    x0, y0, x0, y1);
        if (x1 - x0 > 40.0)
            text(out, (x0 + x1) / 2.0, y0 + 11.0, "middle", "#757575", 10, NULL, b->label);
    }
}

static void state_band(FILE *out, const struct panel *p, double y) {
    const struct tool_timeline *tl = p->tl;
    if (!tl->has_breaker || tl->state_count == 0) {
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#eeeeee\"/>\n",
                LEFT, y, PLOT_W, STATE_H);
        text(out, LEFT + PLOT_W / 2.0, y + 14.0, "middle", "#616161", 12, NULL,
             "no breaker: every call goes to the dependency");
        return;
    }
    for (size_t i = 0; i < tl->state_count; i++) {
        uint64_t from = tl->states[i].t_ns;
        uint64_t to = i + 1 < tl->state_count ? tl->states[i + 1].t_ns : tl->end_ns;
        double x0 = x_of(p, from), x1 = x_of(p, to);
        double w = x1 - x0 < 0.5 ? 0.5 : x1 - x0; /* a short half-open stays visible */
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                x0, y, w, STATE_H, state_color(tl->states[i].state));
        const char *label = state_label(tl->states[i].state);
        if (w > 8.0 * (double)strlen(label))
            text(out, (x0 + x1) / 2.0, y + 14.0, "middle", "#ffffff", 11, "bold", label);
    }
    text(out, LEFT - 6.0, y + 14.0, "end", "#424242", 11, NULL, "breaker");
}

typedef double series_fn(const struct tool_bin *b);
static double s_reached(const struct tool_bin *b) { return b->reached; }
static double s_refused(const struct tool_bin *b) { return b->refused; }
static double s_failed(const struct tool_bin *b) { return b->failed; }
static double s_shed(const struct tool_bin *b) { return b->shed; }

static void polyline(FILE *out, const struct panel *p, series_fn *fn, double per_s, double ymax,
                     double y0, const char *color, double width) {
    const struct tool_timeline *tl = p->tl;
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"", color,
            width);
    for (size_t i = 0; i < tl->bin_count; i++) {
        double v = fn(&tl->bins[i]) * per_s;
        double x = x_of(p, tl->start_ns + (uint64_t)i * tl->bin_ns + tl->bin_ns / 2);
        double y = y0 + RATE_H - (v / ymax) * RATE_H;
        fprintf(out, "%s%.1f,%.1f", i ? " " : "", x, y);
    }
    fputs("\"/>\n", out);
}

static void rate_chart(FILE *out, const struct panel *p, double y0) {
    const struct tool_timeline *tl = p->tl;
    double per_s = 1e9 / (double)tl->bin_ns;
    double max = 0.0;
    for (size_t i = 0; i < tl->bin_count; i++) {
        const struct tool_bin *b = &tl->bins[i];
        double m = fmax(fmax(b->reached, b->refused), fmax(b->failed, b->shed)) * per_s;
        if (m > max) max = m;
    }
    double ymax = nice_ceil(max);
    /* The series' names, each in its colour: the key is the title. */
    double x = LEFT;
    struct {
        const char *label;
        const char *color;
        series_fn *fn;
        bool show;
    } series[] = {{"calls reaching the dependency /s", C_REACHED, s_reached, true},
                  {"refused by the breaker /s", C_REFUSED, s_refused, tl->has_breaker},
                  {"failed (error or timeout) /s", C_FAILED, s_failed, true},
                  {"shed, no free worker /s", C_SHED, s_shed, tl->has_shed}};
    for (size_t i = 0; i < 4; i++) {
        if (!series[i].show) continue;
        text(out, x, y0 - 4.0, "start", series[i].color, 12, "bold", series[i].label);
        x += 7.0 * (double)strlen(series[i].label) + 16.0;
    }
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#9e9e9e\"/>\n",
            LEFT, y0, PLOT_W, RATE_H);
    for (int k = 0; k <= 2; k++) {
        double v = ymax * k / 2.0, y = y0 + RATE_H - RATE_H * k / 2.0;
        char label[32];
        snprintf(label, sizeof(label), "%g", v);
        text(out, LEFT - 6.0, y + 4.0, "end", "#555", 11, NULL, label);
    }
    /* Drawn in this order so that every line stays visible where two meet:
     * the wide "reaching" line under the thin "failed" one. */
    static const int order[] = {3, 1, 0, 2};
    for (int k = 0; k < 4; k++) {
        int i = order[k];
        if (series[i].show)
            polyline(out, p, series[i].fn, per_s, ymax, y0, series[i].color, i == 0 ? 3.0 : 1.5);
    }
}

static double lat_y(double ns, double lo, double hi, double y0) {
    if (ns < lo) ns = lo;
    if (ns > hi) ns = hi;
    return y0 + LAT_H - (log10(ns / lo) / log10(hi / lo)) * LAT_H;
}

static void latency_line(FILE *out, const struct panel *p, double q, double lo, double hi,
                         double y0, const char *color) {
    const struct tool_timeline *tl = p->tl;
    bool open = false;
    for (size_t i = 0; i < tl->bin_count; i++) {
        uint64_t v = tool_bin_quantile(&tl->bins[i], q);
        if (v == 0) {
            if (open) fputs("\"/>\n", out);
            open = false;
            continue;
        }
        /* Steps across the bin: a lone bin still draws a visible line. */
        double x0 = x_of(p, tl->start_ns + (uint64_t)i * tl->bin_ns);
        double x1 = x_of(p, tl->start_ns + (uint64_t)(i + 1) * tl->bin_ns);
        double y = lat_y((double)v, lo, hi, y0);
        if (!open)
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                    color);
        fprintf(out, "%s%.1f,%.1f %.1f,%.1f", open ? " " : "", x0, y, x1, y);
        open = true;
    }
    if (open) fputs("\"/>\n", out);
}

static void latency_chart(FILE *out, const struct panel *p, double y0) {
    const struct tool_timeline *tl = p->tl;
    double hi = 1e9;
    for (size_t i = 0; i < tl->bin_count; i++) {
        double v = (double)tool_bin_quantile(&tl->bins[i], 0.99);
        if (v > hi) hi = v;
    }
    if ((double)tl->timeout_ns > hi) hi = (double)tl->timeout_ns;
    hi = pow(10.0, ceil(log10(hi)));
    double lo = 1e6; /* 1 ms */
    text(out, LEFT, y0 - 4.0, "start", C_P50, 12, "bold", "response time p50");
    text(out, LEFT + 140.0, y0 - 4.0, "start", C_P99, 12, "bold", "p99");
    text(out, LEFT + 175.0, y0 - 4.0, "start", "#757575", 11, NULL,
         tl->has_shed ? "(log scale; refused and shed requests answer at once and are not drawn)"
                      : "(log scale; of the calls the breaker let through)");
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#9e9e9e\"/>\n",
            LEFT, y0, PLOT_W, LAT_H);
    for (double d = lo; d <= hi * 1.001; d *= 10.0) {
        char label[32];
        tool_format_duration((uint64_t)d, label, sizeof(label));
        double y = lat_y(d, lo, hi, y0);
        text(out, LEFT - 6.0, y + 4.0, "end", "#555", 11, NULL, label);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>\n",
                LEFT, y, LEFT + PLOT_W, y);
    }
    if (tl->timeout_ns > 0) {
        double y = lat_y((double)tl->timeout_ns, lo, hi, y0);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-dasharray=\"6,4\"/>\n",
                LEFT, y, LEFT + PLOT_W, y, C_FAILED);
        text(out, LEFT + PLOT_W - 4.0, y - 3.0, "end", C_FAILED, 10, NULL, "timeout");
    }
    latency_line(out, p, 0.99, lo, hi, y0, C_P99);
    latency_line(out, p, 0.50, lo, hi, y0, C_P50);
}

static void panel(FILE *out, const struct tool_timeline *tl, double top) {
    struct panel p = {.tl = tl, .top = top, .span_ns = (double)(tl->end_ns - tl->start_ns)};
    if (p.span_ns <= 0.0) p.span_ns = 1.0;
    text(out, LEFT, top + 16.0, "start", "#212121", 15, "bold", tl->title);
    text(out, LEFT, top + 31.0, "start", "#616161", 11, NULL, tl->subtitle);
    double y_state = top + TITLE_H;
    double y_rate = y_state + STATE_H + GAP + 16.0;
    double y_lat = y_rate + RATE_H + GAP + 16.0;
    double y_end = y_lat + LAT_H;
    phase_bands(out, &p, y_rate, y_end);
    time_axis(out, &p, y_rate, y_end);
    state_band(out, &p, y_state);
    rate_chart(out, &p, y_rate);
    latency_chart(out, &p, y_lat);
}

/* The document's opening: its size, title, background and heading. */
static void document_start(FILE *out, const char *title, double height) {
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            WIDTH, height, WIDTH, height);
    fputs("<title>", out);
    put_text(out, title);
    fputs("</title>\n", out);
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    text(out, LEFT, 24.0, "start", "#000000", 18, "bold", title);
}

int tool_svg_write(FILE *out, const char *title, const struct tool_timeline *const *timelines,
                   size_t count) {
    double height = HEADER_H + PANEL_H * (double)count;
    document_start(out, title, height);
    for (size_t i = 0; i < count; i++)
        panel(out, timelines[i], HEADER_H + PANEL_H * (double)i);
    fputs("</svg>\n", out);
    fflush(out);
    return ferror(out) ? -1 : 0;
}

/* ---- The fleet scenario -----------------------------------------------------------*/

#define BARS_H     120.0
#define BARS_BLOCK (TITLE_H + 16.0 + BARS_H + AXIS_H + 10.0)
#define C_LOCAL    "#ef6c00"
#define C_FLEET    "#1565c0"

typedef double round_fn(const struct tool_fleet_round *r);
static double r_in_flight(const struct tool_fleet_round *r) { return r->max_in_flight; }
static double r_dead(const struct tool_fleet_round *r) { return (double)r->dead; }

/* Bars per recovery round, local and fleet side by side; `cap` > 0 draws a
 * dashed line at that value (the configured probe limit). */
static void round_bars(FILE *out, const struct tool_fleet_result *r, double top, const char *what,
                       round_fn *fn, double cap) {
    uint32_t rounds =
        r->local.round_count > r->fleet.round_count ? r->local.round_count : r->fleet.round_count;
    double y0 = top + TITLE_H + 16.0;
    text(out, LEFT, top + 16.0, "start", "#212121", 15, "bold", what);
    char line[160];
    snprintf(line, sizeof(line), "%s: per recovery round", r->name);
    text(out, LEFT, top + 31.0, "start", "#616161", 11, NULL, line);
    text(out, LEFT, y0 - 4.0, "start", C_LOCAL, 12, "bold", "local breakers");
    text(out, LEFT + 130.0, y0 - 4.0, "start", C_FLEET, 12, "bold",
         "fleet store (model of breaker_redis)");
    double max = cap;
    for (uint32_t k = 0; k < rounds; k++) {
        if (k < r->local.round_count && fn(&r->local.rounds[k]) > max)
            max = fn(&r->local.rounds[k]);
        if (k < r->fleet.round_count && fn(&r->fleet.rounds[k]) > max)
            max = fn(&r->fleet.rounds[k]);
    }
    double ymax = nice_ceil(max);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#9e9e9e\"/>\n",
            LEFT, y0, PLOT_W, BARS_H);
    for (int k = 0; k <= 2; k++) {
        double v = ymax * k / 2.0, y = y0 + BARS_H - BARS_H * k / 2.0;
        char label[32];
        snprintf(label, sizeof(label), "%g", v);
        text(out, LEFT - 6.0, y + 4.0, "end", "#555", 11, NULL, label);
    }
    double group = rounds > 0 ? PLOT_W / (double)rounds : PLOT_W;
    double bar = group * 0.35;
    for (uint32_t k = 0; k < rounds; k++) {
        double gx = LEFT + group * (double)k;
        const struct tool_fleet_run *runs[2] = {&r->local, &r->fleet};
        const char *colors[2] = {C_LOCAL, C_FLEET};
        for (int i = 0; i < 2; i++) {
            if (k >= runs[i]->round_count) continue;
            double v = fn(&runs[i]->rounds[k]);
            double h = v / ymax * BARS_H;
            double x = gx + group * 0.15 + bar * (double)i;
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x,
                    y0 + BARS_H - h, bar, h, colors[i]);
        }
        char label[16];
        snprintf(label, sizeof(label), "%u", k + 1);
        text(out, gx + group / 2.0, y0 + BARS_H + 14.0, "middle", "#555", 11, NULL, label);
    }
    text(out, LEFT + PLOT_W, y0 + BARS_H + 26.0, "end", "#555", 11, NULL, "recovery round");
    if (cap > 0.0) {
        double y = y0 + BARS_H - cap / ymax * BARS_H;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-dasharray=\"6,4\"/>\n",
                LEFT, y, LEFT + PLOT_W, y, C_FAILED);
        text(out, LEFT + PLOT_W - 4.0, y - 3.0, "end", C_FAILED, 10, NULL, "half_open_max_probes");
    }
}

int tool_svg_write_fleet(FILE *out, const char *title, const struct tool_fleet_result *runs,
                         size_t count) {
    double per = 2.0 * BARS_BLOCK + 2.0 * PANEL_H;
    double height = HEADER_H + per * (double)count;
    document_start(out, title, height);
    for (size_t i = 0; i < count; i++) {
        double top = HEADER_H + per * (double)i;
        round_bars(out, &runs[i], top, "probes in flight at once, all hosts together", r_in_flight,
                   (double)runs[i].max_probes);
        round_bars(out, &runs[i], top + BARS_BLOCK,
                   "probes that reached the dependency while it was down", r_dead, 0.0);
        panel(out, &runs[i].local.timeline, top + 2.0 * BARS_BLOCK);
        panel(out, &runs[i].fleet.timeline, top + 2.0 * BARS_BLOCK + PANEL_H);
    }
    fputs("</svg>\n", out);
    fflush(out);
    return ferror(out) ? -1 : 0;
}

/* Write `n` timelines to `path` ("-": standard output) as one SVG picture
 * (--svg). @return 0, or 1
 * after saying on standard error why the file could not be written. */
int tool_svg_write_file(const char *cmd, const char *path, const char *title,
                        const struct tool_timeline *const *timelines, size_t n) {
    if (strcmp(path, "-") == 0) {
        int rc = tool_svg_write(stdout, title, timelines, n);
        if (fflush(stdout) != 0 || ferror(stdout) || rc != 0) {
            tool_error(stderr, "breaker %s: standard output: write error", cmd);
            return TOOL_EXIT_IOERR;
        }
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        tool_error(stderr, "breaker %s: %s: %s", cmd, path, strerror(errno));
        return TOOL_EXIT_CANTCREAT;
    }
    int rc = tool_svg_write(f, title, timelines, n);
    if (fclose(f) != 0 || rc != 0) {
        tool_error(stderr, "breaker %s: %s: write error", cmd, path);
        return TOOL_EXIT_IOERR;
    }
    return 0;
}

/* --svg -: the picture goes to standard output, the text to standard error. */
bool tool_svg_is_stdout(const char *path) { return path != NULL && strcmp(path, "-") == 0; }
