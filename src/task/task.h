// Task packages: loading a folder or archive, its marked blocks (EVOLVE, REFERENCE,
// USER_INSTRUCTIONS), its identity hash, and splicing new code into EVOLVE blocks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace kf {

enum class BlockKind { kEvolve, kReference, kUserInstructions };
// "EVOLVE", "REFERENCE", "USER_INSTRUCTIONS".
std::string_view block_kind_name(BlockKind kind);

// One marked region of a file. Blocks are addressed by (file, kind, index).
struct Block {
  BlockKind kind = BlockKind::kEvolve;
  std::string file;                  // relative path, '/'-separated
  int index = 0;                     // index among blocks of this kind in this file, in file order
  int start_line = 0, end_line = 0;  // 1-based lines of the START and END markers
  // The lines between the markers with blank edge lines trimmed; each line ends in '\n'
  // (CRLF normalised to LF). Empty for an empty block.
  std::string content;
};

struct TaskFile {
  std::string path;     // relative, '/'-separated
  std::string content;  // raw bytes; empty once the file is stored by hash (`stored` set)
  bool binary = false;  // a NUL in the first 8 KiB: not scanned for blocks
  // A large data file kept once, by content, instead of in memory and in every candidate's
  // folder (see store_large_files): its size, SHA-256 (hex) and the read-only stored copy.
  uint64_t size = 0;
  std::string sha256;
  std::filesystem::path stored;
  std::filesystem::file_time_type stored_time{};  // its modification time when stored
  bool large() const { return !stored.empty(); }
};

struct TaskPackage {
  std::filesystem::path root;         // folder holding the files (the extracted copy for archives)
  std::string source;                 // what the user passed
  std::vector<TaskFile> files;        // sorted by path (byte order)
  std::vector<Block> blocks;          // sorted by file, then line
  std::string hash;                   // SHA-256 hex over every file but config.yaml/overrides.yaml
  std::vector<std::string> warnings;  // for the user (e.g. a very large file), not errors

  const TaskFile* file(std::string_view path) const;  // nullptr when absent
  std::vector<const Block*> blocks_of(BlockKind kind) const;
  // All USER_INSTRUCTIONS blocks joined by a blank line ("" when none).
  std::string user_instructions() const;
  // All REFERENCE blocks, each headed by "// <file> (block <i>)", joined by a blank line.
  std::string reference() const;
  std::filesystem::path config_path() const;     // root/config.yaml
  std::filesystem::path overrides_path() const;  // root/overrides.yaml (may not exist)
};

// Finds the blocks of one file's text. `file` names the file in blocks and messages.
// Errors list every problem, one per line, each with file:line.
Result<std::vector<Block>> parse_blocks(std::string_view file, std::string_view text);

// Loads a folder or a .tar/.tar.gz/.tgz/.zip of one (files at the archive's root or inside
// one top-level folder). Archives are extracted safely (no absolute paths, no '..', no
// symlinks escaping) under `extract_parent`, into a folder named by the archive's content hash
// that later loads reuse. A folder's symlinks follow the archives' rule: one that resolves
// outside the package (or to nothing) is an error naming it and its target; one to a file
// inside is read as that file. Errors list every problem found, one per line.
Result<TaskPackage> load_task(const std::filesystem::path& source,
                              const std::filesystem::path& extract_parent);

// Source files: kernel, test and build files (by extension) and any file holding a block. Every
// other file is data.
bool is_source_file(const TaskPackage& package, const TaskFile& file);

struct LargeFileOptions {
  uint64_t large_bytes = uint64_t{1} << 20;  // data files larger than this are stored by hash
  uint64_t warn_bytes = uint64_t{64} << 20;  // files larger than this get a warning (0 = none)
  std::filesystem::path store_dir;           // content-addressed copies: <store_dir>/<sha256>
};

// Stores each data file over `large_bytes` once under `store_dir` by its SHA-256 (read-only,
// reused across candidates and jobs) and drops its bytes from memory; materialize() then links
// it instead of writing it. Files over `warn_bytes` add a line to package.warnings.
Status store_large_files(TaskPackage& package, const LargeFileOptions& options);

// New text of `file_text` with block (`kind`, `index`) replaced by `code`. Marker lines and
// everything outside the block stay byte-identical; marker lines echoed inside `code` are
// dropped; the new content is edge-trimmed and ends with exactly one newline.
Result<std::string> splice_block(std::string_view file_text, std::string_view file, BlockKind kind,
                                 int index, std::string_view code);

// Replaces every EVOLVE block (codes[i] for blocks_of(kEvolve)[i]) and returns the files whose
// text changed (path -> new content). codes.size() must equal the number of EVOLVE blocks.
Result<std::map<std::string, std::string>> splice_evolve(const TaskPackage& package,
                                                         const std::vector<std::string>& codes);

// Writes the package's files, with `changed` (path -> content) applied, into `dir` (created).
// File modes follow the originals. Files already in `dir` that the package lacks are left alone.
// A stored large file is hard-linked (read-only) from its stored copy, or copied where a link
// cannot be made (another file system): either way `dir` holds every byte of the package.
Status materialize(const TaskPackage& package, const std::map<std::string, std::string>& changed,
                   const std::filesystem::path& dir);

// Writes `dir` (minus .git, build outputs, caches) as an archive chosen by extension: .tar.gz,
// .tgz, .tar or .zip. Entries sit in one top-level folder named after `dir`; times and owners
// are fixed so equal folders give byte-identical archives.
Status write_archive(const std::filesystem::path& dir, const std::filesystem::path& archive);

}  // namespace kf
