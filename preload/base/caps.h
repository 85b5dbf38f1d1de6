/* caps.h: what an OpenSSL instance can use (decoded OPENSSL_CPU_INFO) and object identity. */
#ifndef TLSM_CAPS_H
#define TLSM_CAPS_H

#include "common/schema.h"
#include "base/json.h"

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An instance's capability bits, bit per enum tlsm_cap: which its architecture has (known)
 * and which are on (set). */
struct tlsm_caps {
    uint32_t known, set;
};
/* Decode "CPUINFO: OPENSSL_ia32cap=0x..:0x.." or "OPENSSL_armcap=0x.."; nothing known when
 * the string says nothing we understand. The string's "env:" suffix is ignored: the hex
 * words are the instance's effective capabilities. */
struct tlsm_caps tlsm_caps_decode(const char *cpuinfo);
/* The lib event's "caps" object of named bits ({} when none is known). */
void tlsm_caps_write(struct tlsm_json *j, struct tlsm_caps c);
static inline bool tlsm_caps_has(struct tlsm_caps c, enum tlsm_cap cap)
{
    return c.set >> cap & 1;
}
/* GNU build id of a loaded object as hex, "" if none. */
void tlsm_build_id(const struct link_map *lm, char *buf, size_t cap);
/* The header's "cpu_crypto": this CPU's crypto features, an array of names. */
void tlsm_cpu_crypto_write(struct tlsm_json *j);
/* True when an aarch64 process runs under qemu-user (it then sees the host's cpuinfo). */
bool tlsm_cpu_emulated(void);
/* CPU model name. */
void tlsm_cpu_model(char *buf, size_t cap);

#endif
