// test_pch_owner.cpp - the executable that makes tests/support/test_pch.h's precompiled header
// (tests/CMakeLists.txt); every GoogleTest executable reuses it. Built with the tests' own flags,
// so the header is valid for them; never run.
int main() { return 0; }
