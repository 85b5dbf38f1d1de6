/* tests/unit/json.c: the preload's JSON writer against printf, linked directly (no preload):
 * integers at every digit count and sign, escaping, the bool/safe/raw helpers, overflow. */
#include "base/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int failed;

static void expect(const char *what, const char *got, size_t n, const char *want)
{
    if (n != strlen(want) || memcmp(got, want, n)) {
        printf("FAIL json %s: got %.*s want %s", what, (int)n, got, want);
        failed++;
    }
}

static void ints(void)
{
    char b[256], want[64];
    struct tlsm_json j;
    int64_t v = 1;
    for (int k = 0; k < 19; k++, v = k < 19 ? v * 10 : v) { /* 10^0 .. 10^18, no overflow */
        int64_t vs[] = {v, v - 1, v + 1, -v, -(v - 1)};
        for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
            tlsm_json_begin(&j, b, sizeof(b), "x");
            tlsm_json_int(&j, "v", vs[i]);
            snprintf(want, sizeof(want), "{\"ev\":\"x\",\"v\":%" PRId64 "}\n", vs[i]);
            expect("int", b, tlsm_json_end(&j, b), want);
        }
    }
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_int(&j, "min", INT64_MIN);
    tlsm_json_int(&j, "max", INT64_MAX);
    expect("int extremes", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"min\":-9223372036854775808,\"max\":9223372036854775807}\n");
}

static void strings(void)
{
    char b[256];
    struct tlsm_json j;
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_str(&j, "s", "a\"b\\c\n\x01\xc3\xa9");
    tlsm_json_safe(&j, "c", "AES-128-GCM");
    tlsm_json_bool(&j, "t", 1);
    tlsm_json_bool(&j, "f", 0);
    tlsm_json_raw(&j, "r", "[1,2]");
    expect("strings", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"s\":\"a\\\"b\\\\c\\u000a\\u0001\xc3\xa9\",\"c\":\"AES-128-GCM\","
           "\"t\":true,\"f\":false,\"r\":[1,2]}\n");
    /* Not UTF-8: a lone byte, an overlong '/', a surrogate, a cut euro sign: each byte as the
     * text \xHH; valid characters (4 bytes too) kept. */
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_str(&j, "s", "\xff/\xc0\xaf\xed\xa0\x80\xf0\x9f\x94\x92\xe2\x82");
    expect("strings-not-utf8", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"s\":\"\\\\xff/\\\\xc0\\\\xaf\\\\xed\\\\xa0\\\\x80\xf0\x9f\x94\x92"
           "\\\\xe2\\\\x82\"}\n");
}

/* Fixed point without the locale: a program under de_DE must still get "0.2240". */
static void numbers(void)
{
    char b[256];
    struct tlsm_json j;
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_num(&j, "a", 0.224);
    tlsm_json_num(&j, "b", 12.5);
    tlsm_json_num(&j, "c", 0.00004);
    tlsm_json_num(&j, "d", -3.0);
    expect("numbers", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"a\":0.2240,\"b\":12.5000,\"c\":0.0000,\"d\":0.0000}\n");
}

/* A line that does not fit is dropped whole (0), never written half. */
static void overflow(void)
{
    char b[40];
    struct tlsm_json j;
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_str(&j, "long", "0123456789012345678901234567890123456789");
    if (tlsm_json_end(&j, b) != 0) {
        printf("FAIL json overflow: a line too long for its buffer was not dropped\n");
        failed++;
    }
}

/* tlsm_json_digits counts digits from the bit length: check both sides of every power of ten
 * against printf. */
static void digit_counts(void)
{
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10)
        for (int d = -1; d <= 1; d++) {
            uint64_t v = p + (uint64_t)(int64_t)d;
            char got[32], want[32];
            size_t n = tlsm_json_digits(got, v);
            snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
            if (n != strlen(want) || memcmp(got, want, n)) {
                printf("FAIL json digits: got %.*s want %s\n", (int)n, got, want);
                failed++;
            }
        }
}

int main(void)
{
    digit_counts();
    ints();
    strings();
    numbers();
    overflow();
    if (!failed)
        printf("PASS json writer: integers (every digit count and power of ten, signs, extremes), escaping, "
               "fixed-point numbers, helpers, overflow\n");
    return failed != 0;
}
