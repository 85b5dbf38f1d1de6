/* recsm.c: the TLS record state machine (recsm.h): EVP call events to finished records. */
#include "core/recsm.h"

#include <string.h>

void tlsm_rsm_key(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, const char *cipher,
                  enum tlsm_dir dir, int eiv)
{
    (void)s;
    memset(c, 0, sizeof(*c));
    c->cipher = cipher;
    c->dir = (uint8_t)dir;
    c->eiv = (uint8_t)eiv;
}

static void begin(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, uint64_t t)
{
    c->in_rec = true;
    c->t0 = t;
    c->type = -1;
    c->len = -1;
    c->pt = -1;
    c->out = NULL;
    c->outl = 0;
    c->gcm_ticks = 0;
    c->gcm_bytes = 0;
    c->gcm_fns = 0;
    s->record_begin(s->arg, c); /* last: the record's clock starts here */
}

static void done(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, bool ok, int32_t pt)
{
    c->in_rec = false;
    s->record_done(s->arg, c, ok, pt);
}

void tlsm_rsm_init(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, unsigned given, int enc,
                   uint64_t t)
{
    if (enc >= 0 && (enc ? TLSM_DIR_OUT : TLSM_DIR_IN) != c->dir) {
        /* Turned around: the record in flight (if any) belonged to the other direction. */
        bool was_open = c->in_rec;
        c->in_rec = false;
        if (was_open)
            s->forgotten(s->arg, c, true);
        c->dir = enc ? TLSM_DIR_OUT : TLSM_DIR_IN;
    }
    /* Nonce only, no key, no cipher: TLS 1.3 starts a record. */
    if (given == TLSM_RSM_IV)
        begin(s, c, t);
}

void tlsm_rsm_ctrl(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, int type, int arg,
                   const unsigned char *aad, uint64_t t)
{
    if (type != TLSM_RSM_CTRL_TLS1_AAD || arg != TLSM_RSM_TLS1_AAD_LEN || !aad)
        return;
    begin(s, c, t);
    c->tls = TLSM_TLS12;
    c->type = aad[8];
    /* The AAD's length: the record's (in), or explicit nonce + plaintext (out: the record's
     * length is known at the seal). */
    int32_t n = aad[11] << 8 | aad[12];
    if (c->dir == TLSM_DIR_IN)
        c->len = n;
    else
        c->pt = n >= c->eiv ? n - c->eiv : 0;
}

void tlsm_rsm_aad(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, const unsigned char *in,
                  int inl)
{
    (void)s;
    /* TLS 1.3 AAD is the record header: 17 03 03 LL LL. */
    if (c->in_rec && inl == TLSM_RSM_TLS13_HDR_LEN && in && c->tls != TLSM_TLS12) {
        c->tls = TLSM_TLS13;
        c->len = in[3] << 8 | in[4];
    }
}

/* TLS 1.3 inner plaintext: content ‖ type ‖ zero padding. Returns the content length and sets
 * c->type, or -1 when no type byte is found in the last 256 bytes. */
static int32_t inner_type(struct tlsm_rsm_ctx *c, const unsigned char *p, int32_t n)
{
    int32_t i = n - 1, stop = n > 256 ? n - 256 : 0;
    if (!p)
        return -1;
    while (i >= stop && p[i] == 0)
        i--;
    if (i < stop)
        return -1;
    c->type = p[i];
    return i;
}

void tlsm_rsm_payload(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c,
                      const unsigned char *plain, int32_t plain_len, int32_t in_len, bool ok)
{
    if (!c->in_rec)
        return;
    if (c->tls == TLSM_TLS12) {
        if (c->dir == TLSM_DIR_OUT) {
            c->len = in_len; /* explicit nonce ‖ plaintext ‖ tag, sealed in place */
            done(s, c, ok, c->pt);
        } else {
            done(s, c, ok, ok ? plain_len : 0);
        }
        return;
    }
    if (c->dir == TLSM_DIR_OUT) { /* the input is overwritten by the seal: read it now */
        int32_t pt = inner_type(c, plain, plain_len);
        c->pt = pt < 0 ? plain_len : pt;
        return;
    }
    c->out = plain;
    c->outl = ok ? plain_len : 0;
}

void tlsm_rsm_final(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, bool ok)
{
    if (!c->in_rec || c->tls == TLSM_TLS12)
        return;
    if (c->tls == TLSM_TLS_UNKNOWN)
        c->tls = TLSM_TLS13;
    if (c->dir == TLSM_DIR_OUT) {
        done(s, c, ok, c->pt < 0 ? 0 : c->pt);
        return;
    }
    int32_t pt = ok ? inner_type(c, c->out, c->outl) : 0;
    done(s, c, ok, pt < 0 ? c->outl : pt);
}

void tlsm_rsm_cipher(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, bool has_out,
                     int32_t in_len, int ret)
{
    if (!c->in_rec || c->tls != TLSM_TLS12 || !has_out)
        return;
    if (c->dir == TLSM_DIR_OUT) {
        c->len = in_len;
        done(s, c, ret >= 0, c->pt);
        return;
    }
    done(s, c, ret >= 0, ret > 0 ? ret : 0);
}

void tlsm_rsm_forget(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c)
{
    bool was_open = c->in_rec;
    c->in_rec = false;
    s->forgotten(s->arg, c, was_open);
    memset(c, 0, sizeof(*c));
}
