#include "engine/placement/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace plexus::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string parse_error(const std::string& text) {
  try {
    parse_placement(text);
  } catch (const PlacementError& e) {
    return e.what();
  }
  return "no error";
}

std::string resolve_error(const std::string& text, int world, int p = 0, int t = 0) {
  try {
    Placement pl = parse_placement(text);
    resolve_placement(pl, world, p, t);
  } catch (const PlacementError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Placement, ParsesAxesDegreesAndPlugins) {
  Placement p = parse_placement("D2P2T2+zero1+offload(activations,host)");
  ASSERT_EQ(p.axes.size(), 3u);
  EXPECT_EQ(p.axes[0].letter, 'D');
  EXPECT_EQ(p.axes[0].degree, 2);
  EXPECT_EQ(p.axes[1].letter, 'P');
  EXPECT_EQ(p.axes[2].letter, 'T');
  ASSERT_EQ(p.plugins.size(), 2u);
  EXPECT_EQ(p.plugins[0].name, "zero1");
  EXPECT_TRUE(p.plugins[0].args.empty());
  EXPECT_EQ(p.plugins[1].name, "offload");
  EXPECT_THAT(p.plugins[1].args, ElementsAre("activations", "host"));
}

TEST(Placement, ClusterAndSpreadExpand) {
  Placement c = parse_placement("cluster");
  ASSERT_EQ(c.axes.size(), 3u);
  EXPECT_EQ(std::string({c.axes[0].letter, c.axes[1].letter, c.axes[2].letter}), "DPT");
  EXPECT_FALSE(c.axes[0].written);
  Placement s = parse_placement("spread");
  EXPECT_EQ(std::string({s.axes[0].letter, s.axes[1].letter, s.axes[2].letter}), "TPD");
}

TEST(Placement, DegreeOfDInferredFromWorldSize) {
  Placement p = parse_placement("D");
  resolve_placement(p, 4, 0, 0);
  EXPECT_EQ(p.degree('D'), 4);
  EXPECT_EQ(p.degree('P'), 1);
  Placement c = parse_placement("cluster");
  resolve_placement(c, 8, 2, 2);
  EXPECT_EQ(c.degree('D'), 2);
  EXPECT_EQ(c.degree('P'), 2);
  EXPECT_EQ(c.degree('T'), 2);
}

TEST(Placement, MissingDAxisIsAdded) {
  Placement p = parse_placement("T2");
  resolve_placement(p, 2, 0, 0);
  EXPECT_EQ(p.degree('D'), 1);
  EXPECT_EQ(p.degree('T'), 2);
}

TEST(Placement, RightmostLetterVariesFastest) {
  Placement p = parse_placement("D2P2T2");
  resolve_placement(p, 8, 0, 0);
  // rank = d*4 + p*2 + t
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(p.coordinate(rank, 'D'), rank / 4) << "rank " << rank;
    EXPECT_EQ(p.coordinate(rank, 'P'), (rank / 2) % 2) << "rank " << rank;
    EXPECT_EQ(p.coordinate(rank, 'T'), rank % 2) << "rank " << rank;
  }
  EXPECT_THAT(p.group_ranks(5, 'D'), ElementsAre(1, 5));
  EXPECT_THAT(p.group_ranks(5, 'P'), ElementsAre(5, 7));
  EXPECT_THAT(p.group_ranks(5, 'T'), ElementsAre(4, 5));
  Placement s = parse_placement("spread");  // TPD: D fastest
  resolve_placement(s, 8, 2, 2);
  EXPECT_EQ(s.coordinate(1, 'D'), 1);
  EXPECT_EQ(s.coordinate(1, 'T'), 0);
  EXPECT_EQ(s.coordinate(4, 'T'), 1);
}

TEST(Placement, UnknownLetterNamesCharacterAndPosition) {
  std::string e = parse_error("D2X2");
  EXPECT_THAT(e, HasSubstr("unexpected 'X' at position 3"));
  EXPECT_THAT(e, HasSubstr("D, P or T"));
  EXPECT_THAT(parse_error("Q4"), HasSubstr("unexpected 'Q' at position 1"));
  EXPECT_THAT(parse_error(""), HasSubstr("unexpected end of string"));
}

TEST(Placement, RepeatedAxisZeroDegreeAndBadPluginSyntax) {
  EXPECT_THAT(parse_error("D2D2"), HasSubstr("D is repeated"));
  EXPECT_THAT(parse_error("D0"), HasSubstr("a degree of at least 1"));
  EXPECT_THAT(parse_error("D2+"), HasSubstr("a plugin name"));
  EXPECT_THAT(parse_error("D2+zero1("), HasSubstr("an argument for plugin 'zero1'"));
  EXPECT_THAT(parse_error("D2+offload(a,b"), HasSubstr("closing the arguments"));
  EXPECT_THAT(parse_error("D2 "), HasSubstr("unexpected ' ' at position 3"));
}

TEST(Placement, DegreesThatDoNotMultiplyToWorldSize) {
  EXPECT_THAT(resolve_error("D3", 4), HasSubstr("do not multiply to the world size 4"));
  EXPECT_THAT(resolve_error("D2P2", 6), HasSubstr("D2*P2 = 4"));
  EXPECT_THAT(resolve_error("DP", 6, 4), HasSubstr("not divisible by |P|*|T| = 4"));
  EXPECT_EQ(resolve_error("DP", 6, 3), "no error");
  // P is absent from the string, so --pipeline-degree does not apply and D takes the world.
  EXPECT_EQ(resolve_error("D", 6, 4), "no error");
}

}  // namespace
}  // namespace plexus::engine
