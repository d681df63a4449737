// Task packages: loading a folder or archive, its marked blocks (EVOLVE, REFERENCE,
// USER_INSTRUCTIONS), its identity hash, and splicing new code into EVOLVE blocks.
#pragma once

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
  std::string content;  // raw bytes
  bool binary = false;  // a NUL in the first 8 KiB: not scanned for blocks
};

struct TaskPackage {
  std::filesystem::path root;   // folder holding the files (the extracted copy for archives)
  std::string source;           // what the user passed
  std::vector<TaskFile> files;  // sorted by path (byte order)
  std::vector<Block> blocks;    // sorted by file, then line
  std::string hash;             // SHA-256 hex over every file but config.yaml/overrides.yaml

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
// that later loads reuse. Errors list every problem found, one per line.
Result<TaskPackage> load_task(const std::filesystem::path& source,
                              const std::filesystem::path& extract_parent);

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
Status materialize(const TaskPackage& package, const std::map<std::string, std::string>& changed,
                   const std::filesystem::path& dir);

// Writes `dir` (minus .git, build outputs, caches) as an archive chosen by extension: .tar.gz,
// .tgz, .tar or .zip. Entries sit in one top-level folder named after `dir`; times and owners
// are fixed so equal folders give byte-identical archives.
Status write_archive(const std::filesystem::path& dir, const std::filesystem::path& archive);

}  // namespace kf
