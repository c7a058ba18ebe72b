#include "nncc/Frontend/Lexer.h"
#include <gtest/gtest.h>
TEST(Placeholder, Builds) { SUCCEED(); }
