/* pb.h: the few protocol-buffer encodings the Perfetto writer needs (varints, length-
 * delimited fields), into a growing buffer. Written from the wire-format documentation
 * (protobuf.dev/programming-guides/encoding): a tag is (field << 3 | wire type); wire type 0
 * is a varint, 2 a length-prefixed byte string or message. A message is built in its own
 * buffer and appended to its parent with pb_bytes. */
#ifndef TLSM_PB_H
#define TLSM_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb {
    uint8_t *b;
    size_t n, cap;
};

void pb_reset(struct pb *p);
void pb_free(struct pb *p);
/* Field of wire type 0: uint64/uint32/enum/bool, and int64/int32 as two's complement. */
void pb_uint(struct pb *p, unsigned field, uint64_t v);
void pb_int(struct pb *p, unsigned field, int64_t v);
/* Field of wire type 2: bytes, a string, or an embedded message's encoding. */
void pb_bytes(struct pb *p, unsigned field, const void *data, size_t n);
void pb_str(struct pb *p, unsigned field, const char *s);

#endif
