/* other.c: an unrelated plugin, no OpenSSL. Its 8 MiB .bss makes its mapping larger than
 * the small plugins': it does not fit where one of them was unmapped, so that memory stays
 * unmapped while this one is loaded. */
int other_touch(int i);

static char pad[8 << 20];

int other_touch(int i)
{
    pad[(unsigned)i % sizeof(pad)]++;
    return pad[(unsigned)i % sizeof(pad)];
}
