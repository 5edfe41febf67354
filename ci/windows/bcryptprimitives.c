/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks.
 *
 * Rust's standard library draws its random seeds (HashMap keys, among others) from
 * ProcessPrng in bcryptprimitives.dll; without it every Rust .exe fails to start under Wine 8
 * (exit 53). This DLL exports ProcessPrng over BCryptGenRandom, which Wine has. It is built by
 * ci/windows/setup-wine with mingw and copied into the Wine prefix's system32; it is test
 * scaffolding only and never shipped. */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
