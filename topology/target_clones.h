// target_clones.h - PLX_TARGET_CLONES: a hot loop built for the widest vector instructions the
// host's processor has, shared by the collectives' reductions (comm/reduce/reduce.cpp) and the
// engine's CPU layers (engine/model/layers/gelu.cpp, engine/optim/adamw.cpp).
//
// On x86-64 with GCC or Clang, PLX_TARGET_CLONES is
// __attribute__((target_clones("avx512f", "avx2", "default"))): the compiler builds the function
// three times and an ifunc resolver picks, once at load time, the widest set this CPU supports
// (AVX-512F, else AVX2, else the build's baseline). Elsewhere, under ThreadSanitizer (which
// instruments the ifunc resolvers; they run before it is initialised and crash) or with
// -DPLEXUS_NO_TARGET_CLONES, it is empty and the baseline loop alone is built.
// PLX_HAVE_TARGET_CLONES says which.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(PLEXUS_NO_TARGET_CLONES) && !defined(__SANITIZE_THREAD__)
#define PLX_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define PLX_HAVE_TARGET_CLONES 1
#else
#define PLX_TARGET_CLONES
#define PLX_HAVE_TARGET_CLONES 0
#endif
