/* record.c: per-context state machine that turns EVP calls into rec events. */
#include "record.h"
#include "backend.h"
#include "blind.h"
#include "clock.h"
#include "config.h"
#include "conn.h"
#include "calib.h"
#include "cputime.h"
#include "impl.h"
#include "json.h"
#include "stack.h"
#include "reroute.h"
#include "table.h"
#include "thread.h"
#include "trace.h"

#include <openssl/obj_mac.h>
#include <string.h>

enum { TLS_UNKNOWN = 0, TLS12 = 12, TLS13 = 13 };

static struct tlsm_table ctxs;

int tlsm_rec_init(void)
{
    return tlsm_table_init(&ctxs, "cipher contexts", 16384, sizeof(struct tlsm_rec_state));
}

uint64_t tlsm_rec_untracked(void)
{
    return ctxs.full;
}

struct tlsm_rec_state *tlsm_rec_lookup(const EVP_CIPHER_CTX *ctx)
{
    return ctx ? tlsm_table_get(&ctxs, ctx) : NULL;
}

void tlsm_rec_forget(const EVP_CIPHER_CTX *ctx)
{
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st)
        return;
    if (st->in_rec)
        tlsm_th.rec_open = false;
    tlsm_reroute_detach(st);
    tlsm_table_del(&ctxs, ctx);
}

/* Only record ciphers are tracked: TLS AEADs. Names are ours, never the library's
 * strings, so an event never points into memory that may go away. */
static const char *aead_name(int nid, bool *gcm)
{
    *gcm = false;
    switch (nid) {
    case NID_aes_128_gcm:
        return *gcm = true, "AES-128-GCM";
    case NID_aes_256_gcm:
        return *gcm = true, "AES-256-GCM";
    case NID_aes_192_gcm:
        return *gcm = true, "AES-192-GCM";
    case NID_chacha20_poly1305:
        return "ChaCha20-Poly1305";
    case NID_aes_128_ccm:
        return "AES-128-CCM";
    case NID_aes_256_ccm:
        return "AES-256-CCM";
    default:
        return NULL;
    }
}

static void begin_record(struct tlsm_rec_state *st, uint64_t t0)
{
    struct tlsm_thread *th = &tlsm_th;
    if (__builtin_expect(th->cpu_kind == TLSM_CPU_UNSET, 0)) {
        tlsm_cpu_thread_setup(th); /* the thread's first record: not part of its time */
        t0 = tlsm_now();
    }
    st->in_rec = true;
    st->t0 = t0;
    st->type = -1;
    st->len = -1;
    st->out = NULL;
    st->outl = 0;
    th->rec_open = true;
    th->gcm_ticks = 0;
    th->gcm_bytes = 0;
    th->gcm_fns = 0;
    tlsm_cpu_begin(th); /* last: the record's clock starts here */
}

/* A context libssl keys for decryption with an AEAD cipher becomes a record source. */
static void track(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                  const unsigned char *iv, bool has_params, const void *caller,
                  struct tlsm_obj *target)
{
    struct tlsm_obj *co = tlsm_obj_of(caller);
    if (co)
        tlsm_obj_describe(co);
    bool gcm;
    const char *name = NULL;
    if (co && co->has_ssl && target && target->api.EVP_CIPHER_get_nid)
        name = aead_name(target->api.EVP_CIPHER_get_nid(cipher), &gcm);
    if (!name) {
        tlsm_rec_forget(ctx);
        return;
    }
    struct tlsm_rec_state *st = tlsm_table_put(&ctxs, ctx);
    if (!st)
        return;
    tlsm_reroute_detach(st); /* re-keyed with a new cipher: the old shadow is stale */
    memset(st, 0, sizeof(*st));
    st->cipher = name;
    st->lib = target;
    st->conn = tlsm_th.conn;
    if (tlsm_cfg.calibrate)
        tlsm_calib_once(target->path);
    tlsm_reroute_attach(st, key, iv);
    if (has_params) /* set by the params, which the shadow did not get */
        tlsm_reroute_mirror_init(st, NULL, NULL, 0, true);
}

void tlsm_rec_on_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                      const unsigned char *iv, int enc, const void *caller, struct tlsm_obj *target,
                      uint64_t t_entry)
{
    (void)caller;
    (void)target;
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st)
        return;
    if (enc == 1) { /* switched to encryption: not a record source any more */
        tlsm_rec_forget(ctx);
        return;
    }
    /* Nonce only, no key, no cipher: TLS 1.3 starts a record. */
    if (!cipher && !key && iv)
        begin_record(st, t_entry);
}

void tlsm_rec_after_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                         const unsigned char *iv, int enc, const OSSL_PARAM *params,
                         const void *caller, struct tlsm_obj *target, int ret)
{
    bool has_params = params && params[0].key; /* an empty list sets nothing */
    if (ret <= 0)
        return;
    if (cipher) {
        if (enc == 0)
            track(ctx, cipher, key, iv, has_params, caller, target);
        return;
    }
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st)
        return;
    tlsm_reroute_mirror_init(st, key, iv, enc, has_params);
    if (st->in_rec && !key && iv)
        tlsm_reroute_begin(st);
}

void tlsm_rec_on_ctrl(struct tlsm_rec_state *st, int type, int arg, const void *ptr,
                      uint64_t t_entry)
{
    const unsigned char *aad = ptr;
    if (type != EVP_CTRL_AEAD_TLS1_AAD || arg != EVP_AEAD_TLS1_AAD_LEN || !aad)
        return;
    /* seq(8) type(1) version(2) length(2) */
    begin_record(st, t_entry);
    st->tls = TLS12;
    st->type = aad[8];
    st->len = aad[11] << 8 | aad[12];
}

static void emit(struct tlsm_rec_state *st, bool ok, int32_t pt)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_cpu_span sp;
    tlsm_cpu_end(th, st->t0, &sp);
    uint32_t conn = th->conn ? th->conn : st->conn;
    if (conn)
        st->conn = conn;
    st->in_rec = false;
    th->rec_open = false;
    if (!th->ssl_depth) /* its read bypassed the SSL_* hooks? (blind_calls.c) */
        tlsm_blind_orphan_record(tlsm_now());
    tlsm_conn_add_record(sp.cpu_ns, sp.preempt > 0);
    tlsm_reroute_end(st);
    if (!tlsm_cfg.records || !tlsm_trace_ready())
        return;
    static const char *const fns[] = {"none", "decrypt", "ctr32", "both"};
    char line[768];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), "rec");
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(st->t0 - tlsm_trace_t0));
    tlsm_json_int(&j, "tid", th->tid);
    tlsm_json_int(&j, "conn", st->conn);
    tlsm_json_int(&j, "read", th->in_read ? (int64_t)th->read_id : 0);
    tlsm_json_safe(&j, "dir", "in");
    tlsm_json_safe(&j, "tls", st->tls == TLS12 ? "1.2" : st->tls == TLS13 ? "1.3" : "?");
    tlsm_json_int(&j, "type", st->type);
    tlsm_json_int(&j, "len", st->len);
    tlsm_json_int(&j, "pt", pt);
    tlsm_json_safe(&j, "cipher", st->cipher);
    tlsm_json_int(&j, "crypto_ns", (int64_t)sp.cpu_ns);
    if (sp.preempt)
        tlsm_json_int(&j, "preempt", sp.preempt);
    if (th->cpu_kind == TLSM_CPU_PERF_CLOCK &&
        (sp.wall_ns > sp.cpu_ns + 1000 || sp.cpu_ns > sp.wall_ns + 1000))
        tlsm_json_int(&j, "wall_ns", (int64_t)sp.wall_ns);
    tlsm_json_int(&j, "gcm_ns", (int64_t)tlsm_cpu_delta_ns(th, th->gcm_ticks));
    tlsm_json_int(&j, "gcm_bytes", (int64_t)th->gcm_bytes);
    tlsm_json_safe(&j, "gcm_fn", fns[th->gcm_fns & 3]);
    tlsm_json_safe(&j, "path", st->routed ? tlsm_mode_name(tlsm_cfg.crypto) : "native");
    tlsm_json_bool(&j, "tag_ok", ok);
    tlsm_json_int(&j, "lib", st->routed ? st->backend->lib_id : st->lib ? st->lib->lib_id : 0);
    int impl = tlsm_impl_take();
    if (impl)
        tlsm_json_int(&j, "impl", impl);
    if (st->verdict)
        tlsm_json_safe(&j, "verify", st->verdict > 0 ? "same" : "mismatch");
    uint32_t stack = tlsm_stack_sample(th->site, TLSM_STACK_REC);
    if (stack)
        tlsm_json_int(&j, "stack", stack);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

void tlsm_rec_after_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret)
{
    tlsm_reroute_mirror_ctrl(st, type, arg, ptr, ret);
    if (type == EVP_CTRL_AEAD_TLS1_AAD && st->in_rec)
        tlsm_reroute_begin(st);
}

void tlsm_rec_on_update(struct tlsm_rec_state *st, unsigned char *out, const int *outl,
                        const unsigned char *in, int inl, int ret)
{
    if (!st->in_rec)
        return;
    if (!out) {
        /* TLS 1.3 AAD is the record header: 17 03 03 LL LL. */
        if (inl == 5 && in && st->tls != TLS12) {
            st->tls = TLS13;
            st->len = in[3] << 8 | in[4];
        }
        return;
    }
    if (st->tls == TLS12) {
        emit(st, ret > 0, ret > 0 && outl ? *outl : 0);
        return;
    }
    st->out = out;
    st->outl = ret > 0 && outl ? *outl : 0;
}

/* TLS 1.3 inner plaintext: content ‖ type ‖ zero padding. */
static int32_t inner_type(struct tlsm_rec_state *st)
{
    int32_t i = st->outl - 1, stop = st->outl > 256 ? st->outl - 256 : 0;
    if (!st->out)
        return -1;
    while (i >= stop && st->out[i] == 0)
        i--;
    if (i < stop)
        return -1;
    st->type = st->out[i];
    return i;
}

void tlsm_rec_on_final(struct tlsm_rec_state *st, int ret)
{
    if (!st->in_rec || st->tls == TLS12)
        return;
    if (st->tls == TLS_UNKNOWN)
        st->tls = TLS13;
    int32_t pt = ret > 0 ? inner_type(st) : 0;
    emit(st, ret > 0, pt < 0 ? st->outl : pt);
}

void tlsm_rec_on_cipher(struct tlsm_rec_state *st, unsigned char *out, int ret)
{
    if (!st->in_rec || st->tls != TLS12 || !out)
        return;
    emit(st, ret >= 0, ret > 0 ? ret : 0);
}

void tlsm_rec_on_gcm(uint64_t ticks, size_t bytes, int which)
{
    struct tlsm_thread *th = &tlsm_th;
    th->gcm_ticks += ticks;
    th->gcm_bytes += bytes;
    th->gcm_fns |= (uint8_t)which;
}
