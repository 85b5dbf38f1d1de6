/* caps.h: what an OpenSSL instance can use (decoded OPENSSL_CPU_INFO) and object identity. */
#ifndef TLSM_CAPS_H
#define TLSM_CAPS_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>

/* Decode "CPUINFO: OPENSSL_ia32cap=0x..:0x.." or "OPENSSL_armcap=0x.." into a JSON
 * object of named bits; "{}" when the string says nothing we understand. The string's
 * "env:" suffix is ignored: the hex words are the instance's effective capabilities. */
void tlsm_caps_json(const char *cpuinfo, char *buf, size_t cap);
/* GNU build id of a loaded object as hex, "" if none. */
void tlsm_build_id(const struct link_map *lm, char *buf, size_t cap);
/* This CPU's crypto features as a JSON array (header event). */
void tlsm_cpu_crypto_json(char *buf, size_t cap);
/* True when an aarch64 process runs under qemu-user (it then sees the host's cpuinfo). */
bool tlsm_cpu_emulated(void);
/* CPU model name. */
void tlsm_cpu_model(char *buf, size_t cap);

#endif
