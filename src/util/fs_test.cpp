// Tests for the file-system and hash helpers.
#include "util/fs.h"

#include <gtest/gtest.h>

#include "util/hash.h"

namespace kf {

TEST(Fs, WriteThenReadRoundTrips) {
  auto dir = make_temp_dir(fs::temp_directory_path(), "kf_fs_test_");
  ASSERT_TRUE(dir.is_ok()) << dir.message();
  fs::path f = *dir / "sub" / "file.txt";
  ASSERT_TRUE(write_file(f, "hello\n").is_ok());
  auto text = read_file(f);
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text, "hello\n");
  EXPECT_FALSE(read_file(*dir / "missing").is_ok());
  fs::remove_all(*dir);
}

TEST(Hash, Sha256KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(Hasher().add("ab").add("c").hex(), Hasher().add("a").add("bc").hex());
}

}  // namespace kf
