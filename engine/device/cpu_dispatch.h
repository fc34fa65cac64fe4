// cpu_dispatch.h - choosing, once, the version of a CPU loop compiled for the widest vector
// instructions this processor has.
//
// The engine is built for x86-64-v2 (SSE4.2); a hot elementwise loop is also compiled for AVX2
// and AVX-512 by wrapping one always-inline body in functions with GCC's target attribute, and
// pick_for_cpu returns the best the processor runs. (GCC's target_clones does this with an
// ifunc, whose resolver runs while the dynamic loader relocates the program: before the
// ThreadSanitizer runtime exists, so the instrumented resolver crashes there.)
#pragma once

namespace plexus::engine {

template <class Fn>
Fn pick_for_cpu(Fn avx512, Fn avx2, Fn baseline) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return avx512;
  if (__builtin_cpu_supports("avx2")) return avx2;
#else
  (void)avx512;
  (void)avx2;
#endif
  return baseline;
}

}  // namespace plexus::engine

// Defines NAME_avx512, NAME_avx2 and NAME_baseline, each running BODY (an always-inline
// function of the same parameters) compiled for its instruction set, and NAME(), the one for
// this processor (chosen on first use). PARAMS is the parenthesised parameter list, ARGS the
// parenthesised argument list that forwards them.
#if defined(__x86_64__)
#define PLEXUS_CPU_VARIANTS(NAME, BODY, PARAMS, ARGS)                                      \
  __attribute__((target("avx512f"))) void NAME##_avx512 PARAMS { BODY ARGS; }               \
  __attribute__((target("avx2"))) void NAME##_avx2 PARAMS { BODY ARGS; }                    \
  void NAME##_baseline PARAMS { BODY ARGS; }                                                \
  auto NAME() {                                                                             \
    static const auto chosen = ::plexus::engine::pick_for_cpu(&NAME##_avx512, &NAME##_avx2, \
                                                              &NAME##_baseline);            \
    return chosen;                                                                          \
  }
#else
#define PLEXUS_CPU_VARIANTS(NAME, BODY, PARAMS, ARGS)          \
  void NAME##_baseline PARAMS { BODY ARGS; }                   \
  auto NAME() { return &NAME##_baseline; }
#endif
