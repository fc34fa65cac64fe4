// test_pch.h - the precompiled header of the GoogleTest executables (tests/CMakeLists.txt):
// GoogleTest, GoogleMock, nlohmann-json and the standard headers most tests include. Parsing
// these takes about a third of a test's compile; precompiled once, each test loads them instead.
// Every test still includes what it uses: this header only speeds the build.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
