// export.hpp: CLREDUCE_API marks what libclreduce exports, the public API of include/clreduce/.
// The library is built with hidden visibility: everything else in it (variants, plans, sessions)
// stays inside and may change from one release to the next without touching a program's ABI.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define CLREDUCE_API __attribute__((visibility("default")))
#else
#define CLREDUCE_API
#endif
