/* The floor under Web Push encryption (RFC 8291) on this machine: OpenSSL's P-256 key
 * generation with an ECDH against a browser's key, the work each message needs before any
 * AES-GCM seal. Benchmarks/README.md ("Why the Web Push target cannot be met as written")
 * compares it with `Benchmarks/reminders`' figures.
 *   cc -O2 Benchmarks/p256-floor.c -o /tmp/p256-floor -lcrypto && taskset -c 0 /tmp/p256-floor
 * (Debian's libssl-dev) */
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    EVP_PKEY_CTX *generator = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    EVP_PKEY *browser = NULL;
    if (!generator || EVP_PKEY_keygen_init(generator) <= 0 ||
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(generator, NID_X9_62_prime256v1) <= 0 ||
        EVP_PKEY_keygen(generator, &browser) <= 0) {
        fprintf(stderr, "p256-floor: OpenSSL could not make a P-256 key\n");
        return 1;
    }
    const int count = 20000;
    for (int round = 0; round < 3; round++) {
        unsigned char secret[64];
        double start = now();
        for (int i = 0; i < count; i++) {
            EVP_PKEY *sender = NULL;
            size_t length = sizeof secret;
            EVP_PKEY_CTX *agreement = NULL;
            if (EVP_PKEY_keygen(generator, &sender) <= 0 || !(agreement = EVP_PKEY_CTX_new(sender, NULL)) ||
                EVP_PKEY_derive_init(agreement) <= 0 || EVP_PKEY_derive_set_peer(agreement, browser) <= 0 ||
                EVP_PKEY_derive(agreement, secret, &length) <= 0) {
                fprintf(stderr, "p256-floor: the key agreement failed\n");
                return 1;
            }
            EVP_PKEY_CTX_free(agreement);
            EVP_PKEY_free(sender);
        }
        double agreed = now() - start;
        start = now();
        for (int i = 0; i < count; i++) {
            EVP_PKEY *sender = NULL;
            if (EVP_PKEY_keygen(generator, &sender) <= 0) return 1;
            EVP_PKEY_free(sender);
        }
        double generated = now() - start;
        printf("a sender key and its ECDH: %.0f/s (%.1f us); the key alone: %.0f/s (%.1f us)\n", count / agreed,
               agreed / count * 1e6, count / generated, generated / count * 1e6);
    }
    EVP_PKEY_free(browser);
    EVP_PKEY_CTX_free(generator);
    return 0;
}
