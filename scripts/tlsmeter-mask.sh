# tlsmeter-mask.sh: the "software" capability mask, one definition per architecture, sourced
# by tlsmeter-ab, tlsmeter-speed, the demo, the bench scripts and the tests.
# shellcheck shell=sh
#
# The mask hides the CPU's AES and carry-less-multiply instructions from OpenSSL so that a
# program's own libcrypto runs its table AES + 4-bit GHASH: the path of a library stuck
# with software AES. It must take every hardware AES path away on every OpenSSL a program
# may bring (1.1.1, 3.0, 3.5) and nothing else.
#
# x86 (OPENSSL_ia32cap, crypto/cpuid.c): "~A:~B:..." clears the bits of A from word 0 and of B
# from word 1, as CPUID reports them. Word 0 = CPUID.1 EDX (bits 0-31) | ECX (bits 32-63);
# word 1 = CPUID.7.0 EBX (bits 0-31) | ECX (bits 32-63).
#   word 0 bit 57 (ECX 25)  AES-NI       aesni_* and the stitched AES-NI GCM kernel
#   word 0 bit 33 (ECX 1)   PCLMULQDQ    gcm_ghash_clmul / gcm_ghash_avx
#   word 0 bit 41 (ECX 9)   SSSE3        vpaes and bsaes (vector AES) stand in for AES-NI
#                                        while it is set: cleared, the class is table
#   word 1 bit 41 (ECX 9)   VAES         3.5's AES-GCM kernel with VAES + VPCLMULQDQ on
#   word 1 bit 42 (ECX 10)  VPCLMULQDQ   AVX-512 (aes-gcm-avx512.pl) is picked before the
#                                        AES-NI test, so clearing AES-NI alone leaves it on;
#                                        its gate ossl_vaes_vpclmulqdq_capable wants both
# AVX2 and AVX-512 stay on: nothing AES uses them without VAES, and ChaCha20-Poly1305 and
# SHA do (clearing AVX512F costs ChaCha20 about 1.5x, docs/performance.md).
# The three ":~0x0" keep words 2-4 as they are: 3.5 reads five words (CPUID.7.0 EDX, the
# CPUID.7.1 registers, the AVX10 leaf) and zeroes every word the variable does not name,
# while 1.1.1 and 3.0 read two and stop at the next ':'. Without any ':' all of word 1
# (AVX2, AVX-512) would be zeroed on every version.
TLSM_IA32_SOFT_MASK="~0x200020200000000:~0x60000000000:~0x0:~0x0:~0x0"
TLSM_IA32_SOFT_WHAT="AES-NI, PCLMULQDQ, SSSE3, VAES, VPCLMULQDQ off; AVX2/AVX-512 kept"

# aarch64 and 32-bit ARM (OPENSSL_armcap, crypto/armcap.c): the value replaces the capability
# word. 0 clears AES, PMULL and NEON too (NEON would give vpaes/bsaes); ChaCha20 falls to
# scalar code with it.
TLSM_ARM_SOFT_MASK=0
TLSM_ARM_SOFT_WHAT="AES, PMULL and NEON off"

# tlsm_soft_mask ARCH: sets TLSM_MASK_VAR (OPENSSL_ia32cap or OPENSSL_armcap), TLSM_MASK (its
# value) and TLSM_MASK_WHAT for ARCH (x86_64, i386, aarch64, arm; default: this machine's).
# Returns 1, setting nothing, for an architecture with no known mask.
# shellcheck disable=SC2034 # the variables are for the scripts that source this file
tlsm_soft_mask() {
    case ${1:-$(uname -m)} in
    x86_64 | amd64 | i?86)
        TLSM_MASK_VAR=OPENSSL_ia32cap TLSM_MASK=$TLSM_IA32_SOFT_MASK
        TLSM_MASK_WHAT=$TLSM_IA32_SOFT_WHAT
        ;;
    aarch64 | arm64 | arm*)
        TLSM_MASK_VAR=OPENSSL_armcap TLSM_MASK=$TLSM_ARM_SOFT_MASK
        TLSM_MASK_WHAT=$TLSM_ARM_SOFT_WHAT
        ;;
    *) return 1 ;;
    esac
}
