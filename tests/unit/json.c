/* tests/unit/json.c: the preload's JSON writer against printf, linked directly (no preload):
 * integers at every digit count and sign, escaping, the bool/safe/raw helpers, nested
 * objects and arrays (and their misuse). */
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

/* Nested objects and arrays: first members, empty ones, items of every type, arrays of
 * arrays (stack frames), objects in arrays (end.libs), run-time keys. */
static void nesting(void)
{
    char b[512];
    struct tlsm_json j;
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_obj(&j, "o");
    tlsm_json_bool(&j, "a", 1);
    tlsm_json_int(&j, "n", -7);
    tlsm_json_obj_end(&j);
    tlsm_json_obj(&j, "e");
    tlsm_json_obj_end(&j);
    tlsm_json_arr(&j, "l");
    tlsm_json_arr_end(&j);
    tlsm_json_arr(&j, "v");
    tlsm_json_item_int(&j, 3);
    tlsm_json_item_str(&j, "q\"");
    tlsm_json_item_safe(&j, "aes");
    tlsm_json_item_bool(&j, 0);
    tlsm_json_item_bool(&j, 1);
    tlsm_json_arr_end(&j);
    tlsm_json_arr(&j, "f");
    for (int i = 0; i < 2; i++) {
        tlsm_json_arr_item(&j);
        tlsm_json_item_int(&j, i);
        tlsm_json_item_safe(&j, "0x1f");
        tlsm_json_arr_end(&j);
    }
    tlsm_json_arr_end(&j);
    tlsm_json_arr(&j, "libs");
    tlsm_json_obj_item(&j);
    tlsm_json_int(&j, "id", 1);
    tlsm_json_arr(&j, "hooks");
    tlsm_json_item_safe(&j, "SSL_read");
    tlsm_json_arr_end(&j);
    tlsm_json_obj_end(&j);
    tlsm_json_obj_item(&j);
    tlsm_json_obj_end(&j);
    tlsm_json_arr_end(&j);
    tlsm_json_key(&j, "fn_\"k");
    tlsm_json_put(&j, "0", 1);
    tlsm_json_int(&j, "z", 0);
    expect("nesting", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"o\":{\"a\":true,\"n\":-7},\"e\":{},\"l\":[],"
           "\"v\":[3,\"q\\\"\",\"aes\",false,true],\"f\":[[0,\"0x1f\"],[1,\"0x1f\"]],"
           "\"libs\":[{\"id\":1,\"hooks\":[\"SSL_read\"]},{}],\"fn_\\\"k\":0,\"z\":0}\n");

    /* Misuse drops the line whole: left open, closed twice, too deep. */
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_arr(&j, "a");
    if (tlsm_json_end(&j, b) != 0) {
        printf("FAIL json nesting: a line with an array left open was not dropped\n");
        failed++;
    }
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_arr_end(&j);
    if (tlsm_json_end(&j, b) != 0) {
        printf("FAIL json nesting: a close without an open was not dropped\n");
        failed++;
    }
    tlsm_json_begin(&j, b, sizeof(b), "x");
    for (int i = 0; i <= TLSM_JSON_DEPTH; i++)
        tlsm_json_arr(&j, "a");
    for (int i = 0; i <= TLSM_JSON_DEPTH; i++)
        tlsm_json_arr_end(&j);
    if (tlsm_json_end(&j, b) != 0) {
        printf("FAIL json nesting: past TLSM_JSON_DEPTH was not dropped\n");
        failed++;
    }
}

/* Run-time keys with their values (lib.caps, end.hooks), and optional entries: one that does
 * not fit is taken back whole and the line goes on (end.blind). */
static void entries(void)
{
    char b[80];
    struct tlsm_json j;
    tlsm_json_begin(&j, b, sizeof(b), "x");
    tlsm_json_obj(&j, "caps");
    tlsm_json_key(&j, "aesni");
    tlsm_json_bool_k(&j, TLSM_AFTER_KEY, 1);
    tlsm_json_key(&j, "SSL_read");
    tlsm_json_int_k(&j, TLSM_AFTER_KEY, 12);
    tlsm_json_obj_end(&j);
    tlsm_json_arr(&j, "l");
    const char *items[] = {"a", "a path far too long for what is left of this line", "b"};
    for (int i = 0; i < 3; i++) {
        char *mark = j.p;
        tlsm_json_obj_item(&j);
        tlsm_json_str(&j, "p", items[i]);
        tlsm_json_obj_end(&j);
        if (tlsm_json_entry_kept(&j, mark) != (i != 1)) {
            printf("FAIL json entries: entry %d kept %d\n", i, i == 1);
            failed++;
        }
    }
    tlsm_json_arr_end(&j);
    expect("entries", b, tlsm_json_end(&j, b),
           "{\"ev\":\"x\",\"caps\":{\"aesni\":true,\"SSL_read\":12},\"l\":[{\"p\":\"a\"},"
           "{\"p\":\"b\"}]}\n");
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
    nesting();
    entries();
    if (!failed)
        printf("PASS json writer: integers (every digit count and power of ten, signs, extremes), "
               "escaping, fixed-point numbers, helpers, nested objects and arrays, run-time keys, "
               "entries taken back, overflow\n");
    return failed != 0;
}
