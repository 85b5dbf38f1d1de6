/* perfetto.c: --perfetto FILE, the timeline as Perfetto's native protobuf trace, written
 * while reading: one process track per trace, one thread track per thread, and a slice per
 * SSL_read and per record (TrackEvent SLICE_BEGIN/SLICE_END pairs) with their figures as
 * debug annotations. Perfetto calls its JSON import (--chrome) legacy, and the UI fails on
 * very large JSON files; this format streams and opens a long download's timeline.
 *
 * The messages and field numbers used (from Perfetto's trace_packet.proto, track_event.proto,
 * track_descriptor.proto, process_descriptor.proto, thread_descriptor.proto and
 * debug_annotation.proto; the subset is tests/tools/perfetto_subset.proto, which the test
 * decodes the output with):
 *   Trace { repeated TracePacket packet = 1; }
 *   TracePacket { uint64 timestamp = 8; uint32 trusted_packet_sequence_id = 10;
 *                 TrackEvent track_event = 11; uint32 sequence_flags = 13;
 *                 TrackDescriptor track_descriptor = 60; }
 *   TrackDescriptor { uint64 uuid = 1; string name = 2; ProcessDescriptor process = 3;
 *                     ThreadDescriptor thread = 4; uint64 parent_uuid = 5; }
 *   ProcessDescriptor { int32 pid = 1; string process_name = 6; }
 *   ThreadDescriptor { int32 pid = 1; int32 tid = 2; string thread_name = 5; }
 *   TrackEvent { repeated DebugAnnotation debug_annotations = 4; Type type = 9;
 *                uint64 track_uuid = 11; repeated string categories = 22; string name = 23; }
 *   DebugAnnotation { int64 int_value = 4; string string_value = 6; string name = 10; }
 * Timestamps are Unix ns (the trace's start_unix_ns plus the event's t), so a fleet of traces
 * lines up on one axis. */
#include "output/report.h"

#include "base/imap.h"
#include "base/pb.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

enum {
    PKT_TIMESTAMP = 8,
    PKT_SEQUENCE_ID = 10,
    PKT_TRACK_EVENT = 11,
    PKT_SEQUENCE_FLAGS = 13,
    PKT_TRACK_DESCRIPTOR = 60,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT_UUID = 5,
    PD_PID = 1,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    TE_ANNOTATION = 4,
    TE_TYPE = 9,
    TE_TRACK_UUID = 11,
    TE_CATEGORY = 22,
    TE_NAME = 23,
    DA_INT = 4,
    DA_STRING = 6,
    DA_NAME = 10,
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
    SEQ_ID = 1,
    SEQ_INCREMENTAL_STATE_CLEARED = 1,
};

struct perfetto {
    FILE *out;
    struct pb pkt, ev, sub, ann, wrap;
    struct imap threads; /* (trace index, tid) already described */
    long named;          /* index of the last trace whose process track was written */
    uint32_t nthreads;
    size_t slices;
};

struct perfetto *perfetto__open(FILE *out)
{
    struct perfetto *p = xcalloc(1, sizeof(*p));

    p->out = out;
    p->named = -1;
    return p;
}

/* The packet built in p->pkt, as one `packet` field of the Trace message. */
static void put_packet(struct perfetto *p)
{
    pb_reset(&p->wrap);
    pb_bytes(&p->wrap, 1, p->pkt.b, p->pkt.n);
    fwrite(p->wrap.b, 1, p->wrap.n, p->out);
    pb_reset(&p->pkt);
}

static uint64_t process_uuid(long idx)
{
    return (uint64_t)(idx + 1) << 33;
}

static uint64_t thread_uuid(long idx, int64_t tid)
{
    return process_uuid(idx) | (uint64_t)1 << 32 | (uint32_t)tid;
}

static void describe_process(struct perfetto *p, long idx, const struct trace *t)
{
    pb_reset(&p->sub);
    pb_int(&p->sub, PD_PID, (int32_t)t->pid);
    pb_str(&p->sub, PD_NAME, trace_name(t));
    pb_reset(&p->ev);
    pb_uint(&p->ev, TD_UUID, process_uuid(idx));
    pb_str(&p->ev, TD_NAME, trace_name(t));
    pb_bytes(&p->ev, TD_PROCESS, p->sub.b, p->sub.n);
    if (p->named < 0) /* the first packet of the one sequence */
        pb_uint(&p->pkt, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    pb_uint(&p->pkt, PKT_SEQUENCE_ID, SEQ_ID);
    pb_bytes(&p->pkt, PKT_TRACK_DESCRIPTOR, p->ev.b, p->ev.n);
    put_packet(p);
}

static void describe_thread(struct perfetto *p, long idx, const struct trace *t, int64_t tid)
{
    char name[48];

    if (imap__get(&p->threads, (uint64_t)idx, (uint64_t)tid) >= 0)
        return;
    imap__put(&p->threads, (uint64_t)idx, (uint64_t)tid, p->nthreads++);
    snprintf(name, sizeof(name), "thread %lld", (long long)tid);
    pb_reset(&p->sub);
    pb_int(&p->sub, THD_PID, (int32_t)t->pid);
    pb_int(&p->sub, THD_TID, (int32_t)tid);
    pb_str(&p->sub, THD_NAME, name);
    pb_reset(&p->ev);
    pb_uint(&p->ev, TD_UUID, thread_uuid(idx, tid));
    pb_uint(&p->ev, TD_PARENT_UUID, process_uuid(idx));
    pb_bytes(&p->ev, TD_THREAD, p->sub.b, p->sub.n);
    pb_uint(&p->pkt, PKT_SEQUENCE_ID, SEQ_ID);
    pb_bytes(&p->pkt, PKT_TRACK_DESCRIPTOR, p->ev.b, p->ev.n);
    put_packet(p);
}

static void annotate_int(struct perfetto *p, const char *name, int64_t v)
{
    pb_reset(&p->ann);
    pb_str(&p->ann, DA_NAME, name);
    pb_int(&p->ann, DA_INT, v);
    pb_bytes(&p->ev, TE_ANNOTATION, p->ann.b, p->ann.n);
}

static void annotate_str(struct perfetto *p, const char *name, struct strv s)
{
    pb_reset(&p->ann);
    pb_str(&p->ann, DA_NAME, name);
    pb_bytes(&p->ann, DA_STRING, s.p ? s.p : "", s.p ? s.n : 0);
    pb_bytes(&p->ev, TE_ANNOTATION, p->ann.b, p->ann.n);
}

/* Begin the TrackEvent of a slice in p->ev (annotations follow). */
static void slice_head(struct perfetto *p, uint64_t track, const char *cat, const char *name,
                       size_t name_n)
{
    pb_reset(&p->ev);
    pb_uint(&p->ev, TE_TYPE, TYPE_SLICE_BEGIN);
    pb_uint(&p->ev, TE_TRACK_UUID, track);
    pb_str(&p->ev, TE_CATEGORY, cat);
    pb_bytes(&p->ev, TE_NAME, name, name_n);
}

/* The begin packet of the event built in p->ev at ts, and its end packet at ts + dur. */
static void slice_put(struct perfetto *p, uint64_t track, uint64_t ts, int64_t dur)
{
    pb_uint(&p->pkt, PKT_TIMESTAMP, ts);
    pb_uint(&p->pkt, PKT_SEQUENCE_ID, SEQ_ID);
    pb_bytes(&p->pkt, PKT_TRACK_EVENT, p->ev.b, p->ev.n);
    put_packet(p);
    pb_reset(&p->ev);
    pb_uint(&p->ev, TE_TYPE, TYPE_SLICE_END);
    pb_uint(&p->ev, TE_TRACK_UUID, track);
    pb_uint(&p->pkt, PKT_TIMESTAMP, ts + (uint64_t)(dur > 0 ? dur : 0));
    pb_uint(&p->pkt, PKT_SEQUENCE_ID, SEQ_ID);
    pb_bytes(&p->pkt, PKT_TRACK_EVENT, p->ev.b, p->ev.n);
    put_packet(p);
    p->slices++;
}

void perfetto__event(void *ctx, const struct model *m, const struct trace *t, const struct event *e,
                     uint64_t oncpu_ns)
{
    struct perfetto *p = ctx;
    long idx = (long)(t - m->traces);
    int64_t tid = e->i[I_TID];
    char name[64];
    int n;

    if (idx != p->named) {
        describe_process(p, idx, t);
        p->named = idx;
    }
    describe_thread(p, idx, t, tid);
    uint64_t track = thread_uuid(idx, tid);
    /* Unix ns; a hostile start or t is clamped, never wrapped below 0. */
    int64_t at = e->i[I_T] > 0 ? e->i[I_T] : 0;
    uint64_t ts = (uint64_t)at + (uint64_t)(t->start_unix_ns > 0 ? t->start_unix_ns : 0);
    if (e->kind == EV_REC) {
        struct strv c = e->s[S_CIPHER];
        n = snprintf(name, sizeof(name), "%s %.*s", event__is_out(e) ? "encrypt" : "decrypt",
                     (int)(c.p && c.n < 40 ? c.n : 0), c.p ? c.p : "");
        slice_head(p, track, "record", name, (size_t)n);
        annotate_int(p, "conn", e->i[I_CONN]);
        annotate_int(p, "len", e->i[I_LEN]);
        annotate_int(p, "pt", e->i[I_PT]);
        annotate_int(p, "crypto_ns", e->i[I_CRYPTO_NS]);
        /* the weight the report counts: the slice is as long as the record's written time */
        annotate_int(p, "oncpu_ns", oncpu_ns > INT64_MAX ? INT64_MAX : (int64_t)oncpu_ns);
        annotate_str(p, "path", e->s[S_PATH]);
        annotate_str(p, "gcm_fn", e->s[S_GCM_FN]);
        slice_put(p, track, ts, e->i[I_CRYPTO_NS]);
        return;
    }
    if (e->kind == EV_WRITE) { /* the sending side's calls, a category of their own */
        slice_head(p, track, "write", "SSL_write", 9);
        annotate_int(p, "conn", e->i[I_CONN]);
        annotate_int(p, "asked", e->i[I_ASKED]);
        annotate_int(p, "written", e->i[I_WRITTEN]);
        annotate_int(p, "recs", e->i[I_RECS]);
        annotate_int(p, "crypto_ns", e->i[I_CRYPTO_NS]);
        slice_put(p, track, ts, e->i[I_NS]);
        return;
    }
    slice_head(p, track, "read", "SSL_read", 8);
    annotate_int(p, "conn", e->i[I_CONN]);
    annotate_int(p, "want", e->i[I_WANT]);
    annotate_int(p, "got", e->i[I_GOT]);
    annotate_int(p, "recs", e->i[I_RECS]);
    annotate_int(p, "crypto_ns", e->i[I_CRYPTO_NS]);
    slice_put(p, track, ts, e->i[I_NS]);
}

int perfetto__close(struct perfetto *p)
{
    int rc = ferror(p->out) ? -1 : 0;

    pb_free(&p->pkt);
    pb_free(&p->ev);
    pb_free(&p->sub);
    pb_free(&p->ann);
    pb_free(&p->wrap);
    imap__free(&p->threads);
    free(p);
    return rc;
}
