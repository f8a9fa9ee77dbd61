// Crash-safe JSON state files (management registry, target ids, ...).
//
// On disk: {"format":"pfs-state","version":1,"sha256":"<hex>","value":<value>}, pretty-printed
// because operators read them. The checksum covers value.dump() so that a torn or hand-mangled
// file is refused instead of silently starting a daemon with half its state.
//
// save() replaces the file atomically: write <path>.tmp, fsync, rename, fsync the directory.
// After a crash at any point the path holds either the old or the new content.
#pragma once

#include "result.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace pfs::state_file {

enum class LoadStatus {
    ok,
    missing,   // no file: first start, not an error
    corrupt,   // exists but cannot be trusted; `error` tells the operator what to do
    io_error,  // could not be read
};

struct Loaded {
    LoadStatus status = LoadStatus::missing;
    nlohmann::json value;  // the saved value when status == ok
    std::string error;     // a sentence for the operator when status is corrupt or io_error
};

Loaded load(const std::filesystem::path& path);

Status save(const std::filesystem::path& path, const nlohmann::json& value);

}  // namespace pfs::state_file
