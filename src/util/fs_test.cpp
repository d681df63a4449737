// Tests for the file-system and hash helpers.
#include "util/fs.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

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

// Threads of one process writing the same file at once (two branches publishing the same cached
// object): every write succeeds and the file ends whole, as one of them wrote it.
TEST(Fs, ConcurrentWritesOfOneFileAllSucceed) {
  auto dir = make_temp_dir(fs::temp_directory_path(), "kf_fs_test_");
  ASSERT_TRUE(dir.is_ok()) << dir.message();
  const fs::path f = *dir / "same.txt";
  constexpr int kThreads = 8, kWrites = 200;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string text(4096, static_cast<char>('a' + t));
      for (int i = 0; i < kWrites && failures[t].empty(); ++i) {
        if (Status s = write_file(f, text); !s) failures[t] = s.message();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  auto text = read_file(f);
  ASSERT_TRUE(text.is_ok());
  ASSERT_EQ(text->size(), 4096u);
  EXPECT_EQ(text->find_first_not_of(text->front()), std::string::npos);
  EXPECT_EQ(std::distance(fs::directory_iterator(*dir), fs::directory_iterator()), 1);
  fs::remove_all(*dir);
}

TEST(Fs, WriteErrorsNameThePathAndTheCause) {
  auto dir = make_temp_dir(fs::temp_directory_path(), "kf_fs_test_");
  ASSERT_TRUE(dir.is_ok()) << dir.message();
  ASSERT_TRUE(write_file(*dir / "plain", "x").is_ok());
  // A file where a folder should be: the write cannot even start.
  Status s = write_file(*dir / "plain" / "inner.txt", "hello");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find((*dir / "plain").string()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Not a directory"), std::string::npos) << s.message();
  Status w = check_writable_dir(*dir / "plain" / "sub", "paths.logdir");
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.message().rfind(
                "paths.logdir " + (*dir / "plain" / "sub").string() + " is not writable", 0),
            0u)
      << w.message();
  EXPECT_TRUE(check_writable_dir(*dir / "new" / "folder", "paths.logdir").is_ok());
  EXPECT_FALSE(fs::exists(*dir / "new")) << "the check must not create folders";
  fs::remove_all(*dir);
}

TEST(Fs, EnvironmentErrnosSayWhatTheyMean) {
  EXPECT_TRUE(is_environment_errno(ENOSPC));
  EXPECT_TRUE(is_environment_errno(EROFS));
  EXPECT_FALSE(is_environment_errno(ENOENT));
  EXPECT_EQ(io_error_text(ENOSPC), "No space left on device (the disk is full: free some space)");
  EXPECT_NE(io_error_text(EROFS).find("read-only"), std::string::npos);
}

TEST(Hash, Sha256KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(Hasher().add("ab").add("c").hex(), Hasher().add("a").add("bc").hex());
}

}  // namespace kf
