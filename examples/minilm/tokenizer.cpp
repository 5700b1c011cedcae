// BERT uncased WordPiece: normalization, splitting and greedy longest-match (tokenizer.hpp).
#include "tokenizer.hpp"

#include <fstream>

#include "kiln/error.hpp"

namespace minilm {
namespace {

constexpr char32_t kReplacement = 0xFFFD;
constexpr size_t kMaxWordChars = 100;

// UTF-8 to code points; a malformed or overlong sequence gives one U+FFFD per bad byte.
std::u32string decode_utf8(std::string_view s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<uint8_t>(s[i]);
        const int extra = b < 0x80         ? 0
                          : (b >> 5) == 6  ? 1
                          : (b >> 4) == 14 ? 2
                          : (b >> 3) == 30 ? 3
                                           : -1;
        char32_t c = extra == 0 ? b : extra == 1 ? b & 0x1F : extra == 2 ? b & 0x0F : b & 0x07;
        bool ok = extra >= 0 && i + static_cast<size_t>(extra) < s.size() + (extra == 0);
        for (int k = 1; ok && k <= extra; ++k) {
            const auto cont = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
            ok = (cont >> 6) == 2;
            c = c << 6 | (cont & 0x3F);
        }
        constexpr char32_t kMinOf[] = {0, 0x80, 0x800, 0x10000};
        ok =
            ok && (extra == 0 || c >= kMinOf[extra]) && c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF);
        out.push_back(ok ? c : kReplacement);
        i += ok ? static_cast<size_t>(extra) + 1 : 1;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | c >> 6);
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | c >> 12);
        out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | c >> 18);
        out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
        out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

bool in(char32_t c, char32_t lo, char32_t hi) {
    return c >= lo && c <= hi;
}

// Unicode's White_Space, as BERT splits on it.
bool is_whitespace(char32_t c) {
    return c == ' ' || in(c, 0x09, 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

// Control (Cc), format (Cf, the common ones) and private-use characters, but not tab and newlines.
bool is_control(char32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    return c < 0x20 || in(c, 0x7F, 0x9F) || c == 0xAD || in(c, 0x200B, 0x200F) ||
           in(c, 0x202A, 0x202E) || in(c, 0x2060, 0x2064) || in(c, 0x2066, 0x206F) || c == 0xFEFF ||
           in(c, 0xE000, 0xF8FF);
}

bool is_punctuation(char32_t c) {
    return in(c, 33, 47) || in(c, 58, 64) || in(c, 91, 96) || in(c, 123, 126) || c == 0xA1 ||
           c == 0xA7 || c == 0xAB || c == 0xB6 || c == 0xB7 || c == 0xBB || c == 0xBF ||
           in(c, 0x2010, 0x2027) || in(c, 0x2030, 0x2043) || in(c, 0x2045, 0x2051) ||
           in(c, 0x2053, 0x205E) || in(c, 0x3001, 0x3003) || in(c, 0x3008, 0x3011) ||
           in(c, 0x3014, 0x301F);
}

bool is_cjk(char32_t c) {
    return in(c, 0x4E00, 0x9FFF) || in(c, 0x3400, 0x4DBF) || in(c, 0x20000, 0x2A6DF) ||
           in(c, 0x2A700, 0x2B73F) || in(c, 0x2B740, 0x2B81F) || in(c, 0x2B820, 0x2CEAF) ||
           in(c, 0xF900, 0xFAFF) || in(c, 0x2F800, 0x2FA1F);
}

// Latin-1 (U+00C0-U+00FF) and Latin Extended-A (U+0100-U+017F) letters: the ASCII letter their
// canonical decomposition starts with, '.' where they have none.
constexpr std::string_view kLatin1Base =
    "AAAAAA.CEEEEIIII.NOOOOO..UUUUY..aaaaaa.ceeeeiiii.nooooo..uuuuy.y";
constexpr std::string_view kLatinABase =
    "AaAaAaCcCcCcCcDd..EeEeEeEeEeGgGgGgGgHh..IiIiIiIiI...JjKk.LlLlLl."
    "...NnNnNn...OoOoOo..RrRrRrSsSsSsSsTtTt..UuUuUuUuUuUuWwYyYZzZzZz.";
static_assert(kLatin1Base.size() == 64 && kLatinABase.size() == 128);

// Lowercase of a letter without decomposition in those blocks (Æ, Ð, Ø, Þ, Đ, Ħ, Ĳ, Ŀ, Ł, Ŋ, Œ,
// Ŧ) and of the basic Greek and Cyrillic capitals, else the letter.
char32_t lower_undecomposed(char32_t c) {
    if (in(c, 0xC0, 0xDE) && c != 0xD7) return c + 0x20;
    if ((in(c, 0x391, 0x3A9) && c != 0x3A2) || in(c, 0x410, 0x42F)) return c + 0x20;
    if (in(c, 0x400, 0x40F)) return c + 0x50;
    if (in(c, 0x100, 0x137) || in(c, 0x14A, 0x177)) return c | 1;
    if (in(c, 0x139, 0x148) || in(c, 0x179, 0x17E)) return (c & 1) ? c + 1 : c;
    return c;
}

// One character after accent stripping (canonical decomposition, combining marks dropped) and
// lowercasing; 0 when it is dropped.
char32_t fold(char32_t c) {
    if (in(c, 'A', 'Z')) return c + 32;
    if (c < 0x80) return c;
    if (in(c, 0x300, 0x36F)) return 0;
    char base = '.';
    if (in(c, 0xC0, 0xFF)) base = kLatin1Base[c - 0xC0];
    if (in(c, 0x100, 0x17F)) base = kLatinABase[c - 0x100];
    if (base != '.') return fold(static_cast<char32_t>(base));
    return lower_undecomposed(c);
}

// The words and punctuation marks of `text`, normalized.
std::vector<std::u32string> split_words(std::string_view text) {
    std::vector<std::u32string> words;
    std::u32string word;
    auto finish = [&] {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
    };
    for (char32_t c : decode_utf8(text)) {
        if (c == 0 || c == kReplacement || is_control(c)) continue;
        if (is_whitespace(c)) {
            finish();
            continue;
        }
        c = fold(c);
        if (c == 0) continue;
        if (is_punctuation(c) || is_cjk(c)) {
            finish();
            words.push_back(std::u32string(1, c));
            continue;
        }
        word.push_back(c);
    }
    finish();
    return words;
}

}  // namespace

Tokenizer::Tokenizer(const std::filesystem::path& vocab_file) {
    std::ifstream in(vocab_file);
    if (!in) kiln::fail("minilm: cannot read the vocabulary {}", vocab_file.string());
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        ids_.emplace(line, static_cast<int32_t>(tokens_.size()));
        tokens_.push_back(line);
    }
    for (const char* special : {"[CLS]", "[SEP]", "[UNK]"})
        if (!ids_.contains(special))
            kiln::fail("minilm: the vocabulary {} has no {} token; expected BERT's vocab.txt",
                       vocab_file.string(), special);
    cls_ = ids_.at("[CLS]");
    sep_ = ids_.at("[SEP]");
    unk_ = ids_.at("[UNK]");
}

int32_t Tokenizer::id(const std::string& token) const {
    const auto it = ids_.find(token);
    if (it == ids_.end()) kiln::fail("minilm: no token '{}' in the vocabulary", token);
    return it->second;
}

void Tokenizer::split_word(const std::u32string& word, std::vector<int32_t>& ids) const {
    if (word.size() > kMaxWordChars) {
        ids.push_back(unk_);
        return;
    }
    const size_t first = ids.size();
    for (size_t start = 0; start < word.size();) {
        size_t end = word.size();
        int32_t found = -1;
        for (; end > start; --end) {
            std::string piece = start > 0 ? "##" : "";
            for (size_t i = start; i < end; ++i) append_utf8(piece, word[i]);
            const auto it = ids_.find(piece);
            if (it != ids_.end()) {
                found = it->second;
                break;
            }
        }
        if (found < 0) {
            ids.resize(first);
            ids.push_back(unk_);
            return;
        }
        ids.push_back(found);
        start = end;
    }
}

std::vector<std::string> Tokenizer::pieces(std::string_view text) const {
    std::vector<int32_t> ids;
    for (const auto& word : split_words(text)) split_word(word, ids);
    std::vector<std::string> out;
    for (int32_t i : ids) out.push_back(tokens_[static_cast<size_t>(i)]);
    return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, size_t max_tokens) const {
    if (max_tokens < 2) kiln::fail("minilm: max_tokens {}; expected at least 2", max_tokens);
    std::vector<int32_t> ids{cls_};
    for (const auto& word : split_words(text)) split_word(word, ids);
    if (ids.size() > max_tokens - 1) ids.resize(max_tokens - 1);
    ids.push_back(sep_);
    return ids;
}

}  // namespace minilm
