// Tests for loading task packages from folders and archives, hashing and materializing.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "task/task.h"
#include "util/fs.h"

namespace kf {
namespace {

using Files = std::map<std::string, std::string>;

const Files kPackage = {
    {"config.yaml", "task_name: softmax\njob_name: t\nlanguage: OCL\n"},
    {"softmax.cl",
     "// header\n"
     "// [EVOLVE_START]\n"
     "__kernel void softmax() {}\n"
     "// [EVOLVE_END]\n"
     "/* [REFERENCE_START] */\n"
     "__kernel void ref() {}\n"
     "/* [REFERENCE_END] */\n"},
    {"task.cpp", "// tests\nint main() { return 0; }\n"},
    {"README.md",
     "# Softmax\n"
     "<!-- [USER_INSTRUCTIONS_START] -->\n"
     "Rows are 4096 wide.\n"
     "<!-- [USER_INSTRUCTIONS_END] -->\n"
     "# [USER_INSTRUCTIONS_START]\n"
     "Keep fp32 accumulation.\n"
     "# [USER_INSTRUCTIONS_END]\n"},
    {"data/table.bin", std::string("\x01\x00[EVOLVE_START]\x02", 18)},
};

class TaskPackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_task_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    tmp_ = *dir;
    extract_ = tmp_ / "extract";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  fs::path make_folder(const std::string& name, const Files& files) {
    fs::path dir = tmp_ / name;
    for (const auto& [path, content] : files) EXPECT_TRUE(write_file(dir / path, content).is_ok());
    return dir;
  }

  // Writes an archive with libarchive's writer; `prefix` ("" or "pkg/") picks the layout.
  fs::path make_archive(const std::string& name, const Files& files, const std::string& prefix) {
    fs::path path = tmp_ / name;
    struct archive* a = archive_write_new();
    if (name.size() > 4 && name.substr(name.size() - 4) == ".zip") {
      archive_write_set_format_zip(a);
    } else {
      archive_write_set_format_pax_restricted(a);
      if (name.find(".gz") != std::string::npos || name.find(".tgz") != std::string::npos)
        archive_write_add_filter_gzip(a);
    }
    EXPECT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
    for (const auto& [entry_name, content] : files) {
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, (prefix + entry_name).c_str());
      if (content.rfind("->", 0) == 0) {  // "->target" makes a symlink
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, content.substr(2).c_str());
        archive_entry_set_perm(e, 0777);
        archive_write_header(a, e);
      } else {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
        archive_write_header(a, e);
        archive_write_data(a, content.data(), content.size());
      }
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return path;
  }

  TaskPackage load_ok(const fs::path& source) {
    auto r = load_task(source, extract_);
    EXPECT_TRUE(r.is_ok()) << r.message();
    return r.is_ok() ? *r : TaskPackage{};
  }

  std::string load_error(const fs::path& source) {
    auto r = load_task(source, extract_);
    EXPECT_FALSE(r.is_ok());
    return r.message();
  }

  fs::path tmp_, extract_;
};

TEST_F(TaskPackageTest, LoadsFolder) {
  Files files = kPackage;
  files[".git/HEAD"] = "ref: refs/heads/main\n";
  files["__pycache__/x.pyc"] = "junk";
  files["build/softmax.o"] = "junk";
  files["sub/__pycache__/y.pyc"] = "junk";
  fs::path dir = make_folder("pkg", files);
  TaskPackage p = load_ok(dir);
  std::vector<std::string> paths;
  for (const auto& f : p.files) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"README.md", "config.yaml", "data/table.bin",
                                             "softmax.cl", "task.cpp"}));
  EXPECT_EQ(p.root, fs::absolute(dir).lexically_normal());
  EXPECT_EQ(p.source, dir.string());
  EXPECT_EQ(p.config_path(), p.root / "config.yaml");
  EXPECT_EQ(p.overrides_path(), p.root / "overrides.yaml");
  EXPECT_EQ(p.hash.size(), 64u);
  ASSERT_NE(p.file("data/table.bin"), nullptr);
  EXPECT_TRUE(p.file("data/table.bin")->binary);  // its marker text is not scanned
  EXPECT_FALSE(p.file("softmax.cl")->binary);
  EXPECT_EQ(p.file("nope.cl"), nullptr);

  auto evolve = p.blocks_of(BlockKind::kEvolve);
  ASSERT_EQ(evolve.size(), 1u);
  EXPECT_EQ(evolve[0]->file, "softmax.cl");
  EXPECT_EQ(evolve[0]->content, "__kernel void softmax() {}\n");
  EXPECT_EQ(p.user_instructions(), "Rows are 4096 wide.\n\nKeep fp32 accumulation.");
  EXPECT_EQ(p.reference(), "// softmax.cl (block 0)\n__kernel void ref() {}");
}

TEST_F(TaskPackageTest, ArchivesOfEveryKindAndLayoutGiveTheFolderHash) {
  const std::string hash = load_ok(make_folder("pkg", kPackage)).hash;
  for (const char* name : {"a.tar", "b.tar.gz", "c.tgz", "d.zip"}) {
    for (const std::string prefix : {"", "pkg/", "./"}) {
      SCOPED_TRACE(std::string(name) + " prefix '" + prefix + "'");
      fs::path archive =
          make_archive(prefix.empty() ? name : "p_" + std::string(name), kPackage, prefix);
      TaskPackage p = load_ok(archive);
      EXPECT_EQ(p.hash, hash);
      EXPECT_EQ(p.source, archive.string());
      EXPECT_TRUE(fs::exists(p.config_path()));
      EXPECT_EQ(p.root.string().rfind(extract_.string(), 0), 0u) << p.root;
      ASSERT_EQ(p.blocks_of(BlockKind::kEvolve).size(), 1u);
      // A second load reuses the extraction folder.
      EXPECT_EQ(load_ok(archive).root, p.root);
      fs::remove(archive);
    }
  }
}

TEST_F(TaskPackageTest, HashIgnoresConfigButFollowsKernelFiles) {
  fs::path dir = make_folder("pkg", kPackage);
  const std::string hash = load_ok(dir).hash;
  ASSERT_TRUE(write_file(dir / "config.yaml", "task_name: other\nmax_iters: 9\n").is_ok());
  ASSERT_TRUE(write_file(dir / "overrides.yaml", "max_iters: 1\n").is_ok());
  EXPECT_EQ(load_ok(dir).hash, hash);
  ASSERT_TRUE(write_file(dir / "softmax.cl", kPackage.at("softmax.cl") + "// more\n").is_ok());
  const std::string changed = load_ok(dir).hash;
  EXPECT_NE(changed, hash);
  // Moving a file changes the hash too: paths are part of it.
  fs::rename(dir / "task.cpp", dir / "tests.cpp");
  EXPECT_NE(load_ok(dir).hash, changed);
}

TEST_F(TaskPackageTest, MissingEvolveBlockSaysWhatToAdd) {
  Files files = kPackage;
  files["softmax.cl"] = "__kernel void softmax() {}\n";
  fs::path dir = make_folder("noevolve", files);
  std::string err = load_error(dir);
  EXPECT_NE(err.find("task package " + dir.string() + " has no EVOLVE block"), std::string::npos)
      << err;
  EXPECT_NE(err.find("// [EVOLVE_START]"), std::string::npos) << err;
  EXPECT_NE(err.find("// [EVOLVE_END]"), std::string::npos) << err;
  EXPECT_NE(err.find("softmax.cl"), std::string::npos) << err;
}

TEST_F(TaskPackageTest, MissingConfigIsAnError) {
  Files files = kPackage;
  files.erase("config.yaml");
  std::string err = load_error(make_folder("noconfig", files));
  EXPECT_NE(err.find("has no config.yaml at its root"), std::string::npos) << err;

  // Pointing at the parent of a package gets a hint.
  make_folder("outer/inner", kPackage);
  err = load_error(tmp_ / "outer");
  EXPECT_NE(err.find("found inner/config.yaml"), std::string::npos) << err;

  EXPECT_NE(load_error(tmp_ / "missing").find("does not exist"), std::string::npos);
}

TEST_F(TaskPackageTest, ReportsAllProblemsAcrossFiles) {
  Files files = kPackage;
  files["config.yaml"] = "task_name: [unclosed\n";
  files["a.cu"] = "// [EVOLVE_START]\n";
  files["b.py"] = "x = 1\n# [REFERENCE_END]\n";
  std::string err = load_error(make_folder("broken", files));
  EXPECT_NE(err.find("config.yaml:"), std::string::npos) << err;
  EXPECT_NE(err.find("not valid YAML"), std::string::npos) << err;
  EXPECT_NE(err.find("[EVOLVE_START] at a.cu:1 has no [EVOLVE_END]"), std::string::npos) << err;
  EXPECT_NE(err.find("[REFERENCE_END] at b.py:2 has no matching [REFERENCE_START]"),
            std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
}

TEST_F(TaskPackageTest, ArchiveEscapingThePackageIsRefused) {
  Files files = kPackage;
  files["../evil.txt"] = "gotcha";
  files["/tmp/abs.txt"] = "gotcha";
  files["link"] = "->../../outside";
  fs::path archive = make_archive("evil.tar", files, "");
  std::string err = load_error(archive);
  EXPECT_NE(err.find("entry '../evil.txt' contains '..'"), std::string::npos) << err;
  EXPECT_NE(err.find("entry '/tmp/abs.txt' is an absolute path"), std::string::npos) << err;
  EXPECT_NE(err.find("symlink 'link' -> '../../outside' points outside"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(tmp_ / "evil.txt"));
  EXPECT_FALSE(fs::exists(extract_.parent_path() / "evil.txt"));
  // Nothing half-extracted is left behind to be reused later.
  EXPECT_TRUE(fs::is_empty(extract_)) << "extraction folder not cleaned up";
}

TEST_F(TaskPackageTest, SpliceEvolveAndMaterialize) {
  Files files = kPackage;
  files["extra.cl"] = "// [EVOLVE_START]\nint a;\n// [EVOLVE_END]\n";
  fs::path dir = make_folder("pkg", files);
  fs::permissions(dir / "task.cpp", fs::perms::owner_exec, fs::perm_options::add);
  TaskPackage p = load_ok(dir);
  ASSERT_EQ(p.blocks_of(BlockKind::kEvolve).size(), 2u);
  EXPECT_EQ(p.blocks_of(BlockKind::kEvolve)[0]->file, "extra.cl");  // sorted by path

  EXPECT_FALSE(splice_evolve(p, {"only one"}).is_ok());
  auto same = splice_evolve(p, {"int a;", "__kernel void softmax() {}"});
  ASSERT_TRUE(same.is_ok()) << same.message();
  EXPECT_TRUE(same->empty());  // nothing changed

  auto changed = splice_evolve(p, {"int a;", "__kernel void softmax() { /* fast */ }\n"});
  ASSERT_TRUE(changed.is_ok()) << changed.message();
  ASSERT_EQ(changed->size(), 1u);
  ASSERT_EQ(changed->count("softmax.cl"), 1u);

  fs::path out = tmp_ / "candidate";
  ASSERT_TRUE(materialize(p, *changed, out).is_ok());
  auto text = read_file(out / "softmax.cl");
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text,
            "// header\n"
            "// [EVOLVE_START]\n"
            "__kernel void softmax() { /* fast */ }\n"
            "// [EVOLVE_END]\n"
            "/* [REFERENCE_START] */\n"
            "__kernel void ref() {}\n"
            "/* [REFERENCE_END] */\n");
  EXPECT_EQ(*read_file(out / "data/table.bin"), kPackage.at("data/table.bin"));
  EXPECT_EQ(*read_file(out / "config.yaml"), kPackage.at("config.yaml"));
  EXPECT_NE(fs::status(out / "task.cpp").permissions() & fs::perms::owner_exec, fs::perms::none);
  // The original is untouched.
  EXPECT_EQ(*read_file(dir / "softmax.cl"), kPackage.at("softmax.cl"));

  EXPECT_FALSE(materialize(p, {{"new.cl", "x"}}, tmp_ / "c2").is_ok());
  EXPECT_FALSE(materialize(p, {}, dir).is_ok());
}

TEST_F(TaskPackageTest, WriteArchiveRoundTripsAndIsReproducible) {
  fs::path dir = make_folder("best", kPackage);
  const std::string hash = load_ok(dir).hash;
  for (const char* name : {"out/a.tar.gz", "out/b.zip", "out/c.tar"}) {
    SCOPED_TRACE(name);
    fs::path archive = tmp_ / name;
    ASSERT_TRUE(write_archive(dir, archive).is_ok());
    TaskPackage p = load_ok(archive);
    EXPECT_EQ(p.hash, hash);
    EXPECT_EQ(p.root.filename(), "best");  // one top-level folder named after the package
    auto first = read_file(archive);
    fs::path again = tmp_ / "again" / fs::path(name).filename();
    ASSERT_TRUE(write_archive(dir, again).is_ok());
    EXPECT_EQ(*read_file(again), *first);
  }
  EXPECT_FALSE(write_archive(dir, tmp_ / "x.rar").is_ok());
}

// A package is data from someone else: a link out of it is refused (naming the link, its target
// and the fix), as an archive's is; a link to a file inside is read as that file.
TEST_F(TaskPackageTest, FolderSymlinksOutOfThePackageAreRefused) {
  ASSERT_TRUE(write_file(tmp_ / "secret.txt", "hunter2\n").is_ok());
  fs::path dir = make_folder("pkg", kPackage);
  fs::create_symlink(tmp_ / "secret.txt", dir / "data.txt");
  fs::create_directories(dir / "sub");
  fs::create_directory_symlink(tmp_, dir / "sub" / "up");
  std::string error = load_error(dir);
  EXPECT_NE(error.find("symlink 'data.txt' -> '" + (tmp_ / "secret.txt").string() + "'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("symlink 'sub/up'"), std::string::npos) << error;
  EXPECT_NE(error.find("points outside the package"), std::string::npos) << error;
  EXPECT_NE(error.find("replace the link with a copy"), std::string::npos) << error;
  EXPECT_EQ(error.find("hunter2"), std::string::npos);

  fs::remove(dir / "data.txt");
  fs::remove(dir / "sub" / "up");
  fs::create_symlink("../missing.txt", dir / "sub" / "dangling");
  EXPECT_NE(load_error(dir).find("symlink 'sub/dangling' -> '../missing.txt' points to nothing"),
            std::string::npos);

  fs::remove(dir / "sub" / "dangling");
  fs::create_symlink("../task.cpp", dir / "sub" / "alias.cpp");
  TaskPackage p = load_ok(dir);
  ASSERT_NE(p.file("sub/alias.cpp"), nullptr);
  EXPECT_EQ(p.file("sub/alias.cpp")->content, kPackage.at("task.cpp"));
}

// Large data files are stored once by content hash and linked into each candidate's folder;
// sources stay in memory whatever their size; bytes are kept exactly either way.
TEST_F(TaskPackageTest, LargeDataFilesAreStoredOnceByHash) {
  Files files = kPackage;
  std::string big(5000, 'x');
  big += "\xff\xfe not UTF-8\n";
  files["data/big.txt"] = big;
  files["big_header.h"] = "// " + std::string(5000, 'h') + "\n";
  files["notes.md"] = "<!-- [USER_INSTRUCTIONS_START] -->\n" + std::string(5000, 'n') +
                      "\n<!-- [USER_INSTRUCTIONS_END] -->\n";
  fs::path dir = make_folder("pkg", files);
  TaskPackage p = load_ok(dir);
  const std::string hash = p.hash;
  LargeFileOptions options;
  options.large_bytes = 1000;
  options.warn_bytes = 4000;
  options.store_dir = tmp_ / "cache" / "files";
  ASSERT_TRUE(store_large_files(p, options).is_ok());
  EXPECT_EQ(p.hash, hash);  // the task's identity does not depend on how files are kept

  const TaskFile* f = p.file("data/big.txt");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->large());
  EXPECT_TRUE(f->content.empty());
  EXPECT_EQ(f->size, big.size());
  EXPECT_EQ(f->stored, fs::absolute(options.store_dir / f->sha256));
  EXPECT_EQ(*read_file(f->stored), big);
  EXPECT_FALSE(p.file("big_header.h")->large());  // a header is source
  EXPECT_FALSE(p.file("notes.md")->large());      // it holds a block
  EXPECT_FALSE(p.file("softmax.cl")->large());
  ASSERT_EQ(p.warnings.size(), 3u);
  EXPECT_NE(p.warnings[1].find("data/big.txt"), std::string::npos) << p.warnings[1];
  EXPECT_NE(p.warnings[1].find("stored once by content hash"), std::string::npos);

  for (const char* name : {"c1", "c2"}) {
    fs::path out = tmp_ / name;
    ASSERT_TRUE(materialize(p, {}, out).is_ok());
    EXPECT_EQ(*read_file(out / "data/big.txt"), big);
    EXPECT_TRUE(fs::equivalent(out / "data/big.txt", f->stored));  // a link, not a copy
    EXPECT_EQ(fs::hard_link_count(f->stored), name == std::string("c1") ? 2u : 3u);
    EXPECT_EQ(*read_file(out / "big_header.h"), files.at("big_header.h"));
  }
  EXPECT_FALSE(materialize(p, {{"data/big.txt", "x"}}, tmp_ / "c3").is_ok());

  // A stored copy changed behind our back (say by a candidate) is written again.
  fs::permissions(f->stored, fs::perms::owner_write, fs::perm_options::add);
  ASSERT_TRUE(write_file(tmp_ / "evil", std::string(big.size(), 'e')).is_ok());
  fs::rename(tmp_ / "evil", f->stored);
  ASSERT_TRUE(materialize(p, {}, tmp_ / "c4").is_ok());
  EXPECT_EQ(*read_file(tmp_ / "c4" / "data/big.txt"), big);

  // A second load reuses the stored copy after checking it.
  TaskPackage again = load_ok(dir);
  ASSERT_TRUE(store_large_files(again, options).is_ok());
  EXPECT_EQ(again.file("data/big.txt")->stored, f->stored);
}

TEST_F(TaskPackageTest, NonUtf8BytesAreKeptExactly) {
  Files files = kPackage;
  files["softmax.cl"] =
      "// caf\xe9 \xff\n// [EVOLVE_START]\n__kernel void softmax() {} // \xfe\n"
      "// [EVOLVE_END]\n";
  files["config.yaml"] = "# r\xe9sum\xe9\ntask_name: softmax\njob_name: t\nlanguage: OCL\n";
  files["data/raw.dat"] = "\xc3\x28\x80\n";
  fs::path dir = make_folder("pkg", files);
  TaskPackage p = load_ok(dir);
  fs::path out = tmp_ / "candidate";
  ASSERT_TRUE(materialize(p, {}, out).is_ok());
  for (const auto& [path, content] : files) EXPECT_EQ(*read_file(out / path), content) << path;
}

// Every bundled example loads, and each has exactly one EVOLVE and one REFERENCE block; the
// user-style package carries its USER_INSTRUCTIONS from the kernel file it sits in.
TEST_F(TaskPackageTest, BundledExamplesLoad) {
  const char* src = std::getenv("KF_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(src) / "examples" / "tasks")) {
    SCOPED_TRACE(entry.path().string());
    TaskPackage pkg = load_ok(entry.path());
    EXPECT_EQ(pkg.blocks_of(BlockKind::kEvolve).size(), 1u);
    EXPECT_EQ(pkg.blocks_of(BlockKind::kReference).size(), 1u);
    ++seen;
  }
  EXPECT_GE(seen, 5);
  TaskPackage blur = load_ok(fs::path(src) / "examples" / "tasks" / "box_blur_cpp");
  EXPECT_NE(blur.user_instructions().find("golden images"), std::string::npos);
}

}  // namespace
}  // namespace kf
