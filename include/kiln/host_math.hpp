// kiln's math functions on the host, computing the very bits the DSL functions of math.hpp
// compute on every device: each is that DSL function's own expression, evaluated on the host
// with kiln's scalar semantics (no second implementation). For oracles of kernels that use them.
// Each call costs a few hundred nanoseconds. Thread-safe.
#pragma once

namespace kiln::host {

float exp(float x);
float exp2(float x);
float expm1(float x);
float log(float x);
float log2(float x);
float log1p(float x);
float tanh(float x);
float sigmoid(float x);
float erf(float x);
float sin(float x);
float cos(float x);
float pow(float x, float y);
float rsqrt(float x);
float floor(float x);
float ceil(float x);
float trunc(float x);
float round(float x);

}  // namespace kiln::host
