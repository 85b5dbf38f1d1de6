/* marks.h: the strings every OpenSSL build carries, looked for once per loaded object: the
 * TLS record layer's source file name (blind.c: objects tlsmeter cannot see) and the default
 * provider's AES-128-GCM name list (tables.c: copies past LD_PRELOAD). One pass over the
 * object's string constants finds both, and the answer is kept, so the constructor's search
 * and the exit's blind-spot scan read each object's bytes once between them. */
#ifndef TLSM_MARKS_H
#define TLSM_MARKS_H

#include <link.h>
#include <stdbool.h>

struct tlsm_marks {
    bool ssl;      /* "ssl/record/rec_layer_s3.c" (anywhere): libssl's record layer */
    bool provider; /* "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", a whole string */
};

/* The marks of the object info describes (only dlpi_addr, dlpi_name, dlpi_phdr and dlpi_phnum
 * are read). Searched in its string-holding read-only segment (below), once per loaded object:
 * later calls for the same object are a lookup. Reads memory only, no dl* call and no lock
 * waited for: callable from a dl_iterate_phdr callback and from any thread. */
struct tlsm_marks tlsm_marks_of(const struct dl_phdr_info *info);

/* Does ph hold the object's string constants? ld -z separate-code (GNU ld's default on
 * x86_64) puts headers and dynamic symbols in a read-only segment before the code and .rodata
 * in one after it; lld puts .rodata in its one read-only segment before the code; older
 * linkers (-z noseparate-code, aarch64) put code and constants in one R+X segment. */
bool tlsm_marks_holds_strings(const struct dl_phdr_info *info, const ElfW(Phdr) * ph);

#endif
