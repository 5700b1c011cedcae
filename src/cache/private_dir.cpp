// Ownership and permission checks of the cache's directories, and creating them private.
#include "cache/private_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::cache {

std::string private_dir_problem(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        return errno == ENOENT || errno == ENOTDIR  // absent: creating it will say why not
                   ? ""
                   : fmt::format("cannot be examined ({})", std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return "is not a directory";
    if (st.st_uid != ::geteuid())
        return fmt::format("is owned by uid {}, not by you (uid {})", st.st_uid, ::geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return fmt::format(
            "is writable by {} (mode {:o}; expected no write permission but the "
            "owner's)",
            (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777);
    return "";
}

bool trusted_dir(const std::filesystem::path& dir) {
    const std::string problem = private_dir_problem(dir);
    if (problem.empty()) return true;
    warn_once("untrusted:" + dir.string(),
              fmt::format("cache directory {} {}; kiln will not use it: compiled kernels and "
                          "tuning decisions are kept in memory only",
                          dir.string(), problem));
    return false;
}

std::string make_private_dir(const std::filesystem::path& dir) {
    std::filesystem::path partial;
    for (const auto& part : dir) {
        partial /= part;
        if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
            return fmt::format("cannot create {}: {}", partial.string(), std::strerror(errno));
    }
    return "";
}

}  // namespace kiln::cache
