#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-made seed inputs of the fuzz corpora (tests/fuzz/corpus/).

The binary seeds of fuzz_api_sequence are programs in the format
fuzz_api_sequence.c reads: a configuration header, a varint clock start, then
operations. Run from anywhere: python3 tests/fuzz/make_seeds.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

(ACQUIRE, COMPLETE, ADVANCE, ADVANCE_MS, FORCE_OPEN, FORCE_CLOSED, RESET, GET_STATE,
 RETRY_AFTER, COPY, GARBAGE, ZERO, BURST, GENERATION) = range(14)
SUCCESS, FAILURE, IGNORED, CANCELLED = range(4)
CONSECUTIVE, COUNT_WINDOW, TIME_WINDOW = range(3)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def header(trip, threshold=3, window_size=10, min_calls=4, rate_pct=50, buckets=4, bucket_ms=100,
           slow_ms=None, slow_rate_pct=None, open_10ms=10, backoff_tenths=10, open_max_mult=4,
           jitter_pct=None, probes=1, successes=2, probe_timeout_10ms=20, seed=7,
           cancelled_failure=False, huge=None):
    flags = trip
    if slow_ms is not None:
        flags |= 4
    if slow_rate_pct is not None:
        flags |= 8
    if jitter_pct is not None:
        flags |= 16
    if cancelled_failure:
        flags |= 32
    if huge is not None:
        flags |= 64
    h = bytearray([flags, threshold - 1, window_size - 1, min_calls - 1, rate_pct - 1,
                   buckets - 1, bucket_ms - 1])
    if slow_ms is not None:
        h.append(slow_ms - 1)
        if slow_rate_pct is not None and trip != CONSECUTIVE:
            h.append(slow_rate_pct - 1)
    h += bytes([open_10ms - 1, backoff_tenths, open_max_mult - 1])
    if jitter_pct is not None:
        h.append(jitter_pct)
    h += bytes([probes - 1, successes - 1, probe_timeout_10ms - 1, seed - 1])
    if huge is not None:
        h.append(huge)
    return bytes(h)


def burst(base, outcomes):
    return bytes([BURST, len(outcomes) - 1, base, *outcomes])


def call(slot, outcome):
    return bytes([ACQUIRE, slot, COMPLETE, slot, outcome])


def api_seeds():
    seeds = {}
    # Consecutive: trip on 3 failures, refuse while open, probe, close.
    p = header(CONSECUTIVE, threshold=3, open_10ms=10, successes=2) + varint(5 * 10**9)
    p += call(0, SUCCESS) + call(1, FAILURE) * 3
    p += bytes([ACQUIRE, 2, RETRY_AFTER, ADVANCE_MS, 100, GET_STATE])
    p += call(3, SUCCESS) + call(4, SUCCESS) + bytes([RETRY_AFTER, GENERATION])
    seeds["consecutive_trip_and_recover"] = p
    # Count window with slow calls and a slow-call rate: slow successes trip
    # it; three probes at once, one hangs past its timeout.
    p = header(COUNT_WINDOW, window_size=8, min_calls=4, rate_pct=50, slow_ms=50,
               slow_rate_pct=50, open_10ms=5, probes=3, successes=3, probe_timeout_10ms=10)
    p += varint(0)
    for i in range(4):
        p += bytes([ACQUIRE, i, ADVANCE_MS, 60, COMPLETE, i, SUCCESS])
    p += bytes([ADVANCE_MS, 60, ACQUIRE, 0, ACQUIRE, 1, ACQUIRE, 2, ACQUIRE, 3, RETRY_AFTER])
    p += bytes([COMPLETE, 0, SUCCESS, ADVANCE_MS, 200, GET_STATE, COMPLETE, 1, SUCCESS,
                COMPLETE, 2, FAILURE, RETRY_AFTER])
    seeds["count_window_slow_calls_probes_time_out"] = p
    # Time window with jitter and backoff: repeated failed recoveries.
    p = header(TIME_WINDOW, min_calls=2, rate_pct=50, buckets=5, bucket_ms=20, open_10ms=3,
               backoff_tenths=10, open_max_mult=8, jitter_pct=50, probes=2, successes=1)
    p += varint(123456789)
    p += burst(0, [FAILURE, FAILURE, SUCCESS])
    for _ in range(4):
        p += bytes([ADVANCE, *varint(10**9)]) + call(5, FAILURE) + bytes([RETRY_AFTER])
    p += bytes([ADVANCE_MS, 250]) + call(6, SUCCESS) + bytes([GET_STATE])
    seeds["time_window_jitter_backoff"] = p
    # Permits misused: copies, duplicates, garbage, zeroed, out-of-range
    # outcomes, stale completions across manual transitions; cancellations.
    p = header(TIME_WINDOW, min_calls=3, cancelled_failure=True, probes=2) + varint(42)
    p += bytes([ACQUIRE, 0, COPY, 0, 1, COMPLETE, 0, SUCCESS, COMPLETE, 0, SUCCESS,
                COMPLETE, 1, FAILURE, COMPLETE, 1, CANCELLED])
    p += bytes([ACQUIRE, 2, COMPLETE, 2, 4, COMPLETE, 2, 255, COMPLETE, 2, CANCELLED])
    p += bytes([GARBAGE, 3]) + bytes(range(1, 49)) + bytes([COMPLETE, 3, SUCCESS])
    p += bytes([ZERO, 4, COMPLETE, 4, SUCCESS])
    p += bytes([ACQUIRE, 5, FORCE_OPEN, ACQUIRE, 6, COMPLETE, 6, SUCCESS, COMPLETE, 5, FAILURE,
                RETRY_AFTER, FORCE_CLOSED]) + burst(8, [FAILURE] * 7)
    p += bytes([GET_STATE, RESET, GET_STATE])
    seeds["permits_misused_and_manual_control"] = p
    # Half-open probe copies: a copy completed first, then the original.
    p = header(CONSECUTIVE, threshold=1, probes=3, successes=3) + varint(1)
    p += call(0, FAILURE) + bytes([ADVANCE_MS, 100, ACQUIRE, 1, COPY, 1, 2, COMPLETE, 2,
                                   CANCELLED, COMPLETE, 1, SUCCESS, ACQUIRE, 3, COPY, 3, 4,
                                   COMPLETE, 3, SUCCESS, COMPLETE, 4, SUCCESS])
    seeds["probe_copies"] = p
    # The largest probe count and a one-year probe timeout.
    p = header(COUNT_WINDOW, window_size=2, min_calls=1, huge=2) + varint(2**40)
    p += call(0, FAILURE) + bytes([ADVANCE_MS, 101])
    p += burst(0, [SUCCESS, IGNORED, CANCELLED, FAILURE, SUCCESS, SUCCESS, SUCCESS, SUCCESS])
    p += bytes([RETRY_AFTER])
    seeds["max_probes"] = p
    return seeds


CONFIG_SEEDS = {
    "consecutive": "trip=consecutive\nfailure_threshold=3\nopen=250ms\nopen_max=5m\n"
                   "half_open_successes=2\n",
    "time_window": "trip=time_window\nwindow=10s\nwindow_buckets=600\nmin_calls=20\n"
                   "failure_rate=50%\n",
    "slow_calls": "slow_call_rate=80%\nslow_call=800ms\ntrip=count_window\nwindow_size=50\n"
                  "min_calls=10\nopen_jitter=0.2\n",
    "durations": "open=1.5s\nslow_call=0.000001s\nwindow_ns=1000000\nprobe_timeout= 1500us\n"
                 "open_max=2.5m\nopen_ns=18446744073\nwindow=1d\nopen=365d\nopen=365.0000001d\n"
                 "slow_call=1.0000000005s\nslow_call=0.5ns\nopen=.5ms\nopen=5.\n",
    "two_field_errors": "window_ns=1ms\nwindow_buckets=2\nopen=10m\nopen_max=1m\n"
                        "slow_call_rate=0.5\ntrip=consecutive\n",
    "bad_values_small_buffers": "bogus=1\nfailure_rate=2\nopen_backoff=1.5x\n@msglen=5\n"
                                "open_jitter=101%\nseed=0xdeadbeef\ncancelled_as=failure\n"
                                "@msglen=0\nhalf_open_max_probes=4096\nprobe_timeout_ns= 1500us \n"
                                "@msglen=1\nwindow=0.5ms\nopen=366d\n",
}

TRACE_SEEDS = {
    "outage_consecutive": "#!trip=consecutive,failure_threshold=3,open=1s\n"
                          "timestamp,duration,outcome\n"
                          + "".join(f"1700000000.{i:01d},0.010,ok\n" for i in range(5))
                          + "".join(f"1700000001.{i:01d},0.5,ETIMEDOUT\n" for i in range(5))
                          + "".join(f"1700000003.{i:01d},10ms,200\n" for i in range(5)),
    "mixed_outcomes_quoted": '#!trip=count_window,window_size=5,min_calls=3,slow_call=100ms,'
                             'slow_call_rate=50%\n"time","duration","outcome"\n'
                             '0.0,0.2,"503"\n0.1, 0.2 ,cancelled\n0.1,0.01,ignored\n'
                             '0.2,1500us,ECONNREFUSED\n0.3,0.3,404\n0.4,0,timeout\n'
                             '0.5,0.01,EINVAL\n0.6,0.01,success\n',
    "malformed": "ts,duration,outcome\n0.0,0.010\n0.2,abc,ok\n0.3,0.010,maybe\n,,\n"
                 "0.4,0.01,ok,extra\n-1,0.01,ok\n0.5,0.0000000001,ok\n1e3,1,ok\n# comment\n\n"
                 "0.6,0.01,700\n0.7,0.01,OK\n",
    "huge_times": "#!trip=consecutive,failure_threshold=1,open=1ms,probe_timeout=1ms\n"
                  "0,0.001,failure\n18446744073.709551614,0.000000001,ok\n"
                  "5,18446744068.709551615,failure\n",
    "bad_spec": "#!trip=sometimes,open=1s\n1,1,ok\n2,1,failure\n",
    "shadow_log": "#!trip=consecutive,failure_threshold=2,open=1s,half_open_max_probes=1\n"
                  "ts,duration,outcome,would_reject\n0.0,0.01,503,none\n0.1,0.01,503,\n"
                  "0.2,0.01,ok,open\n0.3,0.01,ok,no\n1.2,0.5,ok,-\n1.3,0.01,ok,half_open\n"
                  "1.4,0.01,ok,FORCED_OPEN\n1.9,0.01,ok,ramp\n2.0,0.01,ok,yes\n2.1,0.01,ok,maybe\n",
}


# fuzz_store_file: patches of the template store the harness lays out (see
# fuzz_store_file.c): a flags byte (1: cut the file; 2, 4: the new name's
# configuration; 8: force open, force closed and reset every handle), a
# 16-bit length when cut, then records of a 16-bit offset,
# a length byte and the bytes. The template: header at 0, directory of 4
# entries of 640 bytes at 4096 (each ending with the last control's seq and
# record: beta-count's holds a reset with who and why), data from 8192
# holding the blocks of alpha
# (consecutive, 8192), beta-count (count window and slow calls, 10880) and
# gamma_time (time window, half-open, 18176); 32768 bytes in all.
ENTRIES, DATA, FILE_SIZE, ENTRY = 4096, 8192, 32768, 640
BLOCK_ALPHA, BLOCK_BETA, BLOCK_GAMMA = 8192, 10880, 18176
U64_MAX = 2**64 - 1


def u32(v):
    return (v & 0xFFFFFFFF).to_bytes(4, "little")


def u64(v):
    return (v & U64_MAX).to_bytes(8, "little")


def patch(off, data):
    return off.to_bytes(2, "little") + bytes([len(data)]) + data


def entry(i, field):
    return ENTRIES + i * ENTRY + {"state": 0, "block_off": 8, "block_size": 16, "name": 24,
                                  # The last control (file_store.c, struct store_control).
                                  "ctl_seq": 320, "ctl_action": 328, "ctl_at": 336,
                                  "ctl_until": 344, "ctl_generation": 352, "ctl_who": 360,
                                  "ctl_why": 432}[field]


def store(*patches, cut=None, new_cfg=0, manual=False):
    flags = (new_cfg & 3) << 1 | (8 if manual else 0)
    head = bytes([flags])
    if cut is not None:
        head = bytes([flags | 1]) + cut.to_bytes(2, "little")
    return head + b"".join(patches)


def store_seeds():
    # Header fields: magic 0, version 8, header_size 12, abi 16, boot_id 24,
    # file_size 64, capacity 72, entry_size 76, entries_off 80, data_off 88,
    # data_used 96, names 104, store_id 112, then the stripe claims.
    other_boot = patch(24, b"00000000-0000-0000-0000-000000000000")
    return {
        "unchanged": store(),
        "new_name_time_window": store(new_cfg=2),
        "manual_ramp_new_name": store(new_cfg=3, manual=True),
        "cut_to_header": store(cut=200),
        "cut_in_directory": store(cut=4200),
        "cut_in_first_block": store(cut=9000),
        "grown": store(cut=40000),
        "empty": store(cut=0),
        "magic_zero": store(patch(0, u64(0))),
        "version_99": store(patch(8, u32(99))),
        "capacity_zero": store(patch(72, u32(0))),
        "capacity_too_big": store(patch(72, u32(65537))),
        "entries_off_wraps": store(patch(80, u64(2**64 - 4096))),
        "entries_off_misaligned": store(patch(80, u64(4100))),
        "data_off_past_end": store(patch(88, u64(FILE_SIZE + 4096))),
        "data_off_misaligned": store(patch(88, u64(DATA + 8))),
        "data_used_wraps": store(patch(96, u64(U64_MAX - 64))),
        "data_used_full": store(patch(96, u64(FILE_SIZE - DATA))),
        "names_past_capacity": store(patch(104, u32(1000))),
        # Another boot's file whose directory would no longer fit once laid
        # out again at the usual offsets (200 entries right after the header).
        "other_boot_capacity_overflows": store(other_boot, patch(72, u32(200)),
                                               patch(80, u64(184)), patch(88, u64(32256))),
        "other_boot": store(other_boot),
        "block_off_wraps": store(patch(entry(0, "block_off"), u64(2**64 - 64)),
                                 patch(entry(0, "block_size"), u64(128))),
        "block_off_in_header": store(patch(entry(1, "block_off"), u64(0))),
        "block_off_in_directory": store(patch(entry(1, "block_off"), u64(ENTRIES))),
        "block_off_misaligned": store(patch(entry(0, "block_off"), u64(BLOCK_ALPHA + 8))),
        "block_size_huge": store(patch(entry(2, "block_size"), u64(2**63))),
        "initialising_block_outside": store(patch(entry(2, "state"), u32(1)),
                                            patch(entry(2, "block_off"), u64(2**40)),
                                            patch(entry(2, "block_size"), u64(2**20))),
        "initialising_taken_over": store(patch(entry(1, "state"), u32(1))),
        "initialising_on_live_block": store(patch(entry(1, "state"), u32(1)),
                                            patch(entry(1, "block_off"), u64(BLOCK_ALPHA))),
        # gamma_time (no ramp) CLOSED with the ramp flag (ctl at 256), the
        # ramp ending far ahead (phase_time at 264): found by the fuzzer.
        "ramp_flag_without_ramp": store(patch(BLOCK_GAMMA + 256,
                                              u64(0x2200000000000001) + u64(0x4000050109))),
        "state_garbage": store(patch(entry(0, "state"), u32(7))),
        # beta-count's last control, damaged: each reads as none, and flag 8
        # writes a whole record over it.
        "control_action_garbage": store(patch(entry(1, "ctl_action"), u32(77)), manual=True),
        "control_who_unterminated": store(patch(entry(1, "ctl_who"), b"w" * 72)),
        "control_why_unterminated": store(patch(entry(1, "ctl_why"), b"y" * 208), manual=True),
        "control_why_newline": store(patch(entry(1, "ctl_why"), b"two\nlines\0")),
        "control_seq_odd": store(patch(entry(1, "ctl_seq"), u64(3)), manual=True),
        "control_reset_with_an_end": store(patch(entry(1, "ctl_until"), u64(U64_MAX))),
        "control_generation_huge": store(patch(entry(1, "ctl_generation"), u64(U64_MAX)),
                                         manual=True),
        "control_on_a_fresh_entry": store(patch(entry(0, "ctl_seq"), u64(2)),
                                          patch(entry(0, "ctl_action"), u32(4)),
                                          patch(entry(0, "ctl_at"), u64(5)),
                                          patch(entry(0, "ctl_until"), u64(4))),
        "name_unterminated": store(patch(entry(0, "name"), b"a" * 129)),
        "name_invalid": store(patch(entry(1, "name"), b"bad name!\0")),
        "two_names_one_block": store(patch(entry(1, "block_off"), u64(BLOCK_ALPHA)),
                                     patch(entry(1, "block_size"), u64(2688))),
        # Block fields: magic 0, layout_version 8, total_size 16, epoch 32,
        # limits 40 (half_open_max_probes at 60), ctl 256, ring_next 384.
        "block_magic_zero": store(patch(BLOCK_ALPHA, u64(0))),
        "block_total_size_huge": store(patch(BLOCK_BETA + 16, u64(2**40))),
        "block_probes_huge": store(patch(BLOCK_GAMMA + 60, u32(4095))),
        "block_ctl_garbage": store(patch(BLOCK_ALPHA + 256, bytes(range(0xF8, 0x100)))),
        "block_ring_next_huge": store(patch(BLOCK_BETA + 384, u64(U64_MAX))),
        "block_epoch_huge": store(patch(BLOCK_GAMMA + 32, u64(U64_MAX - 5))),
    }


# Inputs that once found bugs outside the harness; fixed, and kept in the
# corpus so they stay fixed.
def reproducers():
    # A CANCELLED completion of a probe's copy, after the probe itself was
    # completed: ALREADY_SETTLED, yet counted in stats.cancelled.
    p = header(CONSECUTIVE, threshold=1, probes=2, successes=3) + varint(0)
    p += call(0, FAILURE) + bytes([ADVANCE_MS, 100, ACQUIRE, 1, COPY, 1, 2, COMPLETE, 1, SUCCESS,
                                   COMPLETE, 2, CANCELLED])
    yield "fuzz_api_sequence", "cancelled_counted_for_duplicate_probe_copy", p
    # A duration with a tenth significant fraction digit that is still whole
    # nanoseconds (0.0000000001d = 8640 ns): the manual accepts it, the
    # parser refuses it.
    yield "fuzz_config_set", "tenth_fraction_digit_whole_ns", "open=0.0000000001d\n"
    # 30 s written in nanoseconds, the natural form for an *_ns key: refused,
    # because the parser keeps the number times 1e9 in 64 bits.
    yield "fuzz_config_set", "open_ns_30s_in_nanoseconds", "open_ns=30000000000\n"
    # A trace ending one nanosecond before 2^64 ns: the timeline's bin count
    # wraps to 0 and tool_timeline_bin() indexes bins[-1].
    yield "fuzz_replay_trace", "span_near_uint64_max.csv", "0,0,ok\n18446744073.709551614,0,ok\n"


def write(target, name, content, kind="corpus"):
    d = os.path.join(HERE, kind, target)
    os.makedirs(d, exist_ok=True)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(os.path.join(d, name), mode) as f:
        f.write(content)


def main():
    for name, prog in api_seeds().items():
        write("fuzz_api_sequence", name, prog)
    for name, text in CONFIG_SEEDS.items():
        write("fuzz_config_set", name, text)
    for name, text in TRACE_SEEDS.items():
        write("fuzz_replay_trace", name + ".csv", text)
    for name, prog in store_seeds().items():
        write("fuzz_store_file", name, prog)
    for target, name, content in reproducers():
        write(target, name, content, "corpus")


if __name__ == "__main__":
    main()
