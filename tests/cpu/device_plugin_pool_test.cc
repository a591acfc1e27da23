// scuda-device-plugin's pool file (src/k8s/pool.h): the devices it makes,
// and the faults it refuses with a reason.
#include <gtest/gtest.h>

#include "k8s/pool.h"

namespace scuda::k8s {
namespace {

// The error parse_pool gives `text`, "" when it reads.
std::string fault_of(const std::string& text) {
  Pool pool;
  std::string error;
  return parse_pool(text, "pool.toml", &pool, &error) ? "" : error;
}

TEST(DevicePluginPool, MakesOneDevicePerGpuNamedAfterItsServer) {
  Pool pool;
  std::string error;
  ASSERT_TRUE(
      parse_pool("[[server]]\naddress = \"tls://gpu-a.lan:14833\"\ngpus = 2\n"
                 "[[server]]\nname = \"b\"\naddress = \"10.0.0.2:14833\"\ngpus = 1\n",
                 "pool.toml", &pool, &error))
      << error;
  ASSERT_EQ(pool.servers.size(), 2u);
  EXPECT_EQ(pool.servers[0].address, "tls://gpu-a.lan:14833");
  std::vector<std::string> ids;
  for (const PoolDevice& d : pool.devices) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"gpu-a-lan-14833-0", "gpu-a-lan-14833-1", "b-0"}));
  ASSERT_NE(pool.find("b-0"), nullptr);
  EXPECT_EQ(pool.find("b-0")->server, 1u);
  EXPECT_EQ(pool.find("gpu-a-lan-14833-1")->gpu, 1);
  EXPECT_EQ(pool.find("c-0"), nullptr);
}

TEST(DevicePluginPool, RefusesFaultsSayingWhich) {
  EXPECT_NE(fault_of("").find("lists no [[server]]"), std::string::npos);
  EXPECT_NE(fault_of("[[server]]\ngpus = 1\n").find("server 1 has no address"), std::string::npos);
  EXPECT_NE(fault_of("[[server]]\naddress = \"a:1\"\n").find("needs gpus"), std::string::npos);
  EXPECT_NE(fault_of("[[server]]\naddress = \"a:1\"\ngpus = 0\n").find("needs gpus"),
            std::string::npos);
  EXPECT_NE(fault_of("[[server]]\naddress = \"a:1\"\ngpus = \"two\"\n").find("needs gpus"),
            std::string::npos);
  EXPECT_NE(fault_of("[[server]]\nname = \"a b\"\naddress = \"a:1\"\ngpus = 1\n").find("name"),
            std::string::npos);
  EXPECT_NE(
      fault_of("[[server]]\nname = \"" + std::string(70, 'x') + "\"\naddress = \"a:1\"\ngpus = 1\n")
          .find("longer than 63"),
      std::string::npos);
  EXPECT_NE(fault_of("[[server]]\nname = \"a\"\naddress = \"a:1\"\ngpus = 1\n"
                     "[[server]]\nname = \"a\"\naddress = \"b:1\"\ngpus = 1\n")
                .find("server 2 has the name \"a\" of another"),
            std::string::npos);
  EXPECT_NE(fault_of("[[server]\n").find("pool.toml"), std::string::npos);
}

}  // namespace
}  // namespace scuda::k8s
