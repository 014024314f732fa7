#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

/* EVP_PKEY_PUBLIC_KEY is a macro of macros, which Swift does not import. */
static const int COPENSSL_PKEY_PUBLIC_KEY = EVP_PKEY_PUBLIC_KEY;
/* Parameter names with static storage: OSSL_PARAM_BLD keeps the name pointers it is given, which a
   Swift string passed as a C string would not outlive. */
static const char *const COPENSSL_RSA_N = OSSL_PKEY_PARAM_RSA_N;
static const char *const COPENSSL_RSA_E = OSSL_PKEY_PARAM_RSA_E;
