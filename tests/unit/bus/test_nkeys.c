/* Unit test of host/bus/nkeys.c: public keys derived from user seeds (vectors made with
 * Python's cryptography package, tests/e2e/natskeys.py), and the errors for what is
 * not a user seed. The credentials files are tested end to end (test_nats_secure.py). */
#include <stdio.h>
#include <string.h>

#include "../../../host/bus/nkeys.h"

static int failures;

static void vector(const char *seed, const char *want)
{
    char pub[GUST_NKEY_PUBLIC_LEN + 1] = "", why[128] = "";
    int rc = gust_nkey_public_of_seed(seed, strlen(seed), pub, why, sizeof(why));
    if (rc != 0 || strcmp(pub, want) != 0) {
        printf("FAIL: %s -> rc %d %s (%s), want %s\n", seed, rc, pub, why, want);
        failures++;
    }
}

static void refused(const char *seed, const char *want)
{
    char pub[GUST_NKEY_PUBLIC_LEN + 1] = "", why[128] = "";
    int rc = gust_nkey_public_of_seed(seed, strlen(seed), pub, why, sizeof(why));
    if (rc == 0 || strstr(why, want) == NULL) {
        printf("FAIL: %s -> rc %d why '%s', want '%s'\n", seed, rc, why, want);
        failures++;
    }
}

int main(void)
{
    vector("SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEQ",
           "UA5WUJ54Z23KILLCUOUNAKTPBVZWKMQVO4O6EQ5GHLAERIMLLHNCTYM5");
    vector("SUAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4H776Y",
           "UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK");
    refused("SAAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4HYMHI", "not a user seed");
    refused("SOAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4H2AJA", "not a user seed");
    refused("SUAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4I776Y", "checksum");
    refused("SUAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4H776", "wrong length");
    refused("UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK", "not an NKey seed");
    refused("suaaaaicamcakbqhbaequcymbuha6earcijrifiwc4mbsgq3dqor4h776y", "base32");
    refused("", "wrong length");
    printf("%s\n", failures == 0 ? "ok" : "FAILED");
    return failures != 0;
}
