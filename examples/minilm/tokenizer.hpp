// The WordPiece tokenizer of BERT uncased models (all-MiniLM-L6-v2's), from the model's
// vocab.txt: the text is cleaned (control characters dropped, whitespace made spaces), CJK
// ideographs set apart, accents stripped and letters lowercased; split on whitespace and
// punctuation; each word split greedily into the longest vocabulary pieces, later pieces with
// "##", a word that cannot be split (or of more than 100 characters) becoming [UNK]; the ids
// framed by [CLS] and [SEP] and cut to at most 128.
//
// Limits: accents are stripped and case folded for ASCII, Latin-1 and Latin Extended-A (and
// combining marks U+0300-U+036F are dropped); basic Greek and Cyrillic capitals are lowercased
// (their accented forms are not decomposed); letters of other scripts pass through as written,
// where Hugging Face's tokenizer would fold them. Punctuation is
// ASCII's, Latin-1's and General Punctuation's (U+2010-U+205E) and CJK's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace minilm {

class Tokenizer {
  public:
    // Reads vocab.txt (one token a line; the line number is its id).
    explicit Tokenizer(const std::filesystem::path& vocab_file);

    // The ids of `text` (UTF-8; invalid bytes count as U+FFFD and are dropped), with [CLS] first
    // and [SEP] last, at most `max_tokens` in all.
    std::vector<int32_t> encode(std::string_view text, size_t max_tokens = 128) const;
    // The word pieces of `text` before framing and truncation (for tests and inspection).
    std::vector<std::string> pieces(std::string_view text) const;

    int32_t id(const std::string& token) const;  // a kiln::Error when absent
    size_t vocab_size() const { return tokens_.size(); }

  private:
    void split_word(const std::u32string& word, std::vector<int32_t>& ids) const;

    std::vector<std::string> tokens_;
    std::unordered_map<std::string, int32_t> ids_;
    int32_t cls_ = 0, sep_ = 0, unk_ = 0;
};

}  // namespace minilm
