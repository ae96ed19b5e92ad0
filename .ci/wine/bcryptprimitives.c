/*
 * bcryptprimitives.dll for Debian 12's Wine 8, which has none: Rust's std
 * (1.78 and later) imports ProcessPrng from it at load time, so without it
 * no Rust program for x86_64-pc-windows-gnu starts under that Wine (Wine 9
 * has the DLL). CI builds it with mingw-w64 into its Wine prefix; it is
 * never part of a release. ProcessPrng fills the buffer with random bytes
 * and always succeeds on Windows; RtlGenRandom (advapi32's
 * SystemFunction036) does the work here.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000 ? 0x10000 : (ULONG)len;

		if (!RtlGenRandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
