// PTBLexer.flex's rules, in its order, as patterns for PtbNfa, and its actions (see ptb/lexer.h).
// Names follow the macros of the flex file. The scanner takes, at each position, the longest
// match of any rule, the earlier rule on a tie; for a rule with trailing context r1/r2 the length
// compared is that of r1 r2 and the token is the longest r1 that leaves an r2, as JFlex does.
#include "eval/ptb/lexer.h"

#include <initializer_list>

#include "eval/ptb/regex.h"
#include "eval/ptb/unicode.h"

namespace saccade {
namespace {

PtbReP S(std::u16string_view spec) {
  return set(chars(spec));
}
PtbReP not_in(std::u16string_view spec) {
  return set(~chars(spec));
}
// A caseless word whose first letter must be upper case (a [X]yz in the flex file).
PtbReP capital(std::u16string_view word) {
  return seq({S(word.substr(0, 1)), lit(word.substr(1))});
}

// Letters the flex file adds to [:letter:]: marks, modifier letters and signs of many scripts.
const std::u16string_view kExtraLetters =
    u"\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F\u0370-\u037D\u0384\u0385"
    u"\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525\u055A-\u055F\u0591-\u05BD"
    u"\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F\u064B-\u065E\u0670\u06D6-\u06EF"
    u"\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F\u07A6-\u07B1\u07CA-\u07F5\u07FA\u0900-\u0903"
    u"\u093C\u093E-\u094E\u0951-\u0955\u0962-\u0963\u0981-\u0983\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD"
    u"\u09D7\u09E2\u09E3\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2"
    u"\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03\u0C3E-\u0C56\u0D3E-\u0D44\u0D46-\u0D48\u0E30-\u0E3A"
    u"\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD";

const std::u16string_view kMiscSymbols =
    u"+%&~^|\\\u00A6\u00A7\u00A8\u00A9\u00AC\u00AE\u00AF\u00B0-\u00BA\u00D7\u00F7\u0387\u05BE\u05C0"
    u"\u05C3\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B\u061E\u066A\u066D"
    u"\u0703-\u070D\u07F6-\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017\u2020-\u2023\u2030-\u2038\u203B"
    u"\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F\u2190-\u21FF\u2200-\u2BFF\u3012\u30FB"
    u"\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65";

// The macros more than one rule uses.
struct Macros {
  PtbReP space, newline, spacenl, spacenls, sgml, digit, letter, letter_digit, word, apos, aposetc;
  PtbReP jletter, jletter_digit, spamp, acro, acro2, redaux, sredaux, insentp, thing, hthing, thinga;
};

PtbReP make_sgml() {
  const PtbReP name = seq({S(u"A-Za-z"), star(S(u"A-Za-z0-9_:.-"))});
  const PtbReP value = alt(
      {seq({lit(u"'"), star(not_in(u"'")), lit(u"'")}), seq({lit(u"\""), star(not_in(u"\"")), lit(u"\"")})});
  const PtbReP blanks = star(S(u" "));
  const PtbReP attribute = seq({plus(S(u" ")), alt({name, seq({name, blanks, lit(u"="), blanks, value})})});
  return seq(
      {lit(u"<"),
       alt(
           {seq({S(u"!?"), S(u"A-Za-z-"), star(not_in(u">\r\n"))}),
            seq({name, star(attribute), blanks, opt(lit(u"/"))}), seq({lit(u"/"), name})}),
       blanks, lit(u">")});
}

void make_word_macros(Macros& m) {
  const PtbCharSet digit = with_bits(kPtbDigit) | chars(u"\u07C0-\u07C9");
  const PtbCharSet letter = with_bits(kPtbLetter) | chars(kExtraLetters);
  const PtbReP splet = seq({lit(u"&"), S(u"aeiouAEIOU"), lits({u"acute", u"grave", u"uml"}), lit(u";")});
  m.digit = set(digit);
  m.letter = alt({set(letter), splet});
  m.letter_digit = alt({set(letter | digit), splet});
  m.word = seq({m.letter, star(m.letter_digit), star(seq({S(u".!?"), m.letter, star(m.letter_digit)}))});
  m.apos = alt({S(u"'\u0092\u2019"), lit(u"&apos;")});
  m.aposetc = alt({m.apos, S(u"`\u0091\u2018\u201B")});
  m.jletter = set(with_bits(kPtbLetter));
  m.jletter_digit = set(with_bits(kPtbLetter | kPtbDigit));
  m.spamp = lit(u"&amp;");
  m.redaux = seq({m.apos, alt({S(u"msdMSD"), lits({u"re", u"ve", u"ll"})})});
  m.sredaux = seq({lit(u"n"), m.aposetc, lit(u"t")});
  m.insentp = S(u",;:\u3001");
  const PtbReP acro_special = alt(
      {seq({lits({u"Canada", u"Sino", u"Korean", u"EU", u"Japan", u"non"}), lit(u"-U.S")}),
       seq({lit(u"U.S.-"), lits({u"U.K", u"U.S.S.R"})})});
  const PtbReP dotted = seq({lit(u"."), S(u"A-Za-z")});
  m.acro = alt({seq({S(u"A-Za-z"), star(dotted)}), acro_special});
  m.acro2 = alt({seq({S(u"A-Za-z"), plus(dotted)}), acro_special});
}

void make_thing_macros(Macros& m) {
  const PtbReP hyphen = S(u"-_\u058A\u2010\u2011");
  const PtbReP part = seq({opt(seq({S(u"dDoOlL"), m.aposetc, m.jletter_digit})), plus(m.jletter_digit)});
  m.thing = seq({part, star(seq({hyphen, part}))});
  m.hthing = seq(
      {S(u"A-Za-z0-9"), star(S(u"A-Za-z0-9.,\u00AD")),
       plus(seq({lit(u"-"), alt({plus(S(u"A-Za-z0-9\u00AD")), seq({m.acro2, lit(u".")})})}))});
  m.thinga = seq({plus(S(u"A-Z")), plus(seq({alt({S(u"+&"), m.spamp}), plus(S(u"A-Z"))}))});
}

Macros make_macros() {
  Macros m;
  m.space = S(u" \t\u00A0\u2000-\u200A\u3000");
  m.newline = alt({S(u"\r\n\u2028\u2029\v\f\u0085"), lit(u"\r\n")});
  m.spacenl = alt({m.space, m.newline});
  m.spacenls = plus(m.spacenl);
  m.sgml = make_sgml();
  make_word_macros(m);
  make_thing_macros(m);
  return m;
}

// What a rule does with its text.
enum class Act {
  kPlain,
  kPushback,      // keep the first size - pushback units, lex the rest again
  kNbsp,          // spaces become U+00A0
  kReplace,       // the token is `replacement`
  kAmp,           // &amp; becomes &
  kNoSoftHyphen,  // U+00AD removed
  kQuote,         // PTB quotes; `left` picks `` and ` for " and '
  kFraction,      // vulgar fraction characters spelled out
  kCurrency,      // cents, pound and generic currency signs renamed
  kAcronym,       // "U.S." then "." again; a single letter "I." is "I" then "."
  kPeriodAgain,   // the token, then its final period lexed again
  kPhone,         // spaces become U+00A0, parentheses -LRB- -RRB-
  kParens,        // parentheses become -LRB- -RRB-
  kHyphens,       // three or four hyphens become "--"
  kSkip,          // no token
};

struct Rule {
  PtbReP pattern;
  PtbReP trail;  // trailing context, or null
  Act act = Act::kPlain;
  int pushback = 0;
  bool left = false;
  int parts = -1;  // for a context rule, the index of its head and trail in PtbLexer's parts_
  std::u16string_view replacement;
};

Rule context(PtbReP pattern, PtbReP trail, Act act = Act::kPlain) {
  Rule rule;
  rule.pattern = std::move(pattern);
  rule.trail = std::move(trail);
  rule.act = act;
  return rule;
}
Rule plain(PtbReP pattern, Act act = Act::kPlain) {
  return context(std::move(pattern), nullptr, act);
}
Rule replace(PtbReP pattern, std::u16string_view replacement) {
  Rule rule = plain(std::move(pattern), Act::kReplace);
  rule.replacement = replacement;
  return rule;
}
Rule pushback(PtbReP pattern, int units) {
  Rule rule = plain(std::move(pattern), Act::kPushback);
  rule.pushback = units;
  return rule;
}
Rule quote(PtbReP pattern, PtbReP trail, bool left) {
  Rule rule = context(std::move(pattern), std::move(trail), Act::kQuote);
  rule.left = left;
  return rule;
}

// ABBREV1: abbreviations usually followed by a lower-case word.
PtbReP make_abbrev1() {
  const PtbReP months =
      lits({u"Jan", u"Feb", u"Mar", u"Apr", u"Jun", u"Jul", u"Aug", u"Sep", u"Sept", u"Oct", u"Nov", u"Dec"});
  const PtbReP days = lits({u"Mon", u"Tue", u"Tues", u"Wed", u"Thu", u"Thurs", u"Fri"});
  const PtbReP states = alt(
      {lits({u"Ala",  u"Ariz", u"Calif", u"Colo", u"Conn", u"Ct",   u"Dak",  u"Fla",  u"Ga",  u"Ind",
             u"Kan",  u"Kans", u"Ky",    u"Md",   u"Mich", u"Minn", u"Mo",   u"Mont", u"Neb", u"Nev",
             u"Okla", u"Penn", u"Tenn",  u"Va",   u"Vt",   u"Wis",  u"Wisc", u"Wyo"}),
       capital(u"Az"), capital(u"Ark"), capital(u"Del"), capital(u"Ill"), capital(u"La"), capital(u"Mass"),
       capital(u"Miss"), capital(u"Ore"), capital(u"Pa"), capital(u"Tex"), capital(u"Wash")});
  const PtbReP companies = alt(
      {lits(
           {u"Inc", u"Co", u"Cos", u"Corp", u"Ltd", u"Plc", u"Rt", u"Bancorp", u"Bhd", u"Assn", u"Univ",
            u"Intl", u"Sys"}),
       seq({lit(u"P"), opt(lit(u"p")), lit(u"t"), S(u"ye"), opt(lit(u"s"))})});
  const PtbReP before_numbers = lits({u"tel", u"est", u"ext", u"sq"});
  const PtbReP person_suffixes =
      alt({lits({u"Jr", u"Sr", u"Bros", u"Blvd", u"Rd", u"Esq"}), seq({lits({u"Ed", u"Ph"}), lit(u".D")})});
  return seq(
      {alt(
           {months, days, states, companies, before_numbers, person_suffixes,
            lits({u"etc", u"al", u"seq", u"Bldg"})}),
       lit(u".")});
}

// ABBREV4: abbreviations usually followed by an upper-case word (ABBREV2 adds the period).
PtbReP make_abbrev4(const Macros& m) {
  const PtbReP titles = alt(
      {lits({u"Mr",    u"Mrs",  u"Ms",    u"Dr",    u"Drs", u"Prof", u"Profs", u"Sen",    u"Sens",
             u"Rep",   u"Reps", u"Atty",  u"Attys", u"Lt",  u"Col",  u"Gen",   u"Messrs", u"Gov",
             u"Govs",  u"Adm",  u"Rev",   u"Maj",   u"Sgt", u"Cpl",  u"Pvt",   u"Capt",   u"St",
             u"Ste",   u"Ave",  u"Pres",  u"Lieut", u"Hon", u"Brig", u"Cmdr",  u"Comdr",  u"Pfc",
             u"Spc",   u"Supt", u"Supts", u"Det",   u"Mt",  u"Ft",   u"Adj",   u"Adv",    u"Asst",
             u"Assoc", u"Ens",  u"Insp",  u"Mlle",  u"Mme", u"Msgr", u"Sfc"}),
       capital(u"Miss")});
  const PtbReP companies =
      alt({lits({u"Invt", u"Elec", u"Natl", u"Dept"}), seq({lit(u"M"), S(u"ft"), lit(u"g")})});
  return alt(
      {titles, lits({u"vs", u"Alex", u"Wm", u"Jos", u"Cie", u"a.k.a", u"cf", u"TREAS", u"Ph"}), m.acro,
       companies});
}

// The words after which an acronym's period is also a sentence end (case-sensitive first letter).
PtbReP make_sentence_starters(const Macros& m) {
  std::vector<PtbReP> words;
  for (const std::u16string_view word :
       {u"About", u"According", u"Additionally", u"After", u"An",    u"A",       u"As",   u"At",
        u"But",   u"Earlier",   u"He",           u"Her",   u"Here",  u"However", u"If",   u"In",
        u"It",    u"Last",      u"Many",         u"More",  u"Mr.",   u"Ms.",     u"Now",  u"Once",
        u"One",   u"Other",     u"Our",          u"She",   u"Since", u"So",      u"Some", u"Such",
        u"That",  u"The",       u"Their",        u"Then",  u"There", u"These",   u"They", u"This",
        u"We",    u"When",      u"While",        u"What",  u"Yet",   u"You"}) {
    words.push_back(capital(word));
  }
  words.push_back(m.sgml);
  return seq({m.spacenls, alt(std::move(words)), m.spacenl});
}

PtbReP make_apoword(const Macros& m) {
  return alt(
      {seq({m.apos, lit(u"n"), opt(m.apos)}), seq({S(u"lLdDjJ"), m.apos}),
       seq({lits({u"Dunkin", u"somethin", u"ol"}), m.apos}), seq({m.apos, lit(u"em")}),
       seq({S(u"A-HJ-XZn"), m.aposetc, m.jletter, m.jletter, star(m.jletter)}),
       seq({m.apos, S(u"2-9"), lit(u"0s")}), seq({m.apos, lit(u"til"), opt(lit(u"l"))}),
       seq({m.jletter, star(m.jletter), S(u"aeiouyAEIOUY"), m.aposetc, S(u"aeiouA-Z"), star(m.jletter)}),
       seq({m.apos, lit(u"cause")}), seq({lit(u"cont'd"), opt(lit(u"."))}),
       lits({u"'twas", u"nor'easter", u"c'mon", u"e'er", u"s'mores", u"ev'ry", u"li'l", u"nat'l"}),
       seq({lit(u"O"), m.aposetc, lit(u"o")})});
}

PtbReP make_full_url() {
  return seq(
      {lit(u"http"), opt(lit(u"s")), lit(u"://"), plus(not_in(u" \t\n\f\r\"<>|(){}")),
       not_in(u" \t\n\f\r\"<>|.!?(){},-")});
}

PtbReP make_likely_url() {
  // ",-_" in the domain class is the range U+002C..U+005F: no digits, capitals or '/'.
  const PtbReP www = seq(
      {lit(u"www."), plus(seq({plus(not_in(u" \t\n\f\r\"<>|.!?(){},")), lit(u".")})),
       rep(S(u"a-zA-Z"), 2, 4)});
  const PtbReP domain = seq(
      {plus(seq({plus(not_in(u" \t\n\f\r\"`'<>|.!?(){},-_$")), lit(u".")})),
       lits({u"com", u"net", u"org", u"edu"})});
  const PtbReP path = seq({lit(u"/"), plus(not_in(u" \t\n\f\r\"<>|()")), not_in(u" \t\n\f\r\"<>|.!?(){},-")});
  return seq({alt({www, domain}), opt(path)});
}

PtbReP make_email() {
  const PtbReP label = plus(not_in(u" \t\n\f\r\"<>|(){}.\u00A0"));
  return seq(
      {opt(lits({u"&lt;", u"<"})), S(u"a-zA-Z0-9"), star(not_in(u" \t\n\f\r\"<>|()\u00A0{}")), lit(u"@"),
       star(seq({label, lit(u".")})), label, opt(lits({u"&gt;", u">"}))});
}

PtbReP make_phone() {
  const PtbReP d = S(u"0-9");
  const PtbReP gap = S(u"- \u00A0");
  const PtbReP plus_signs = seq({lit(u"+"), opt(lit(u"+"))});
  const PtbReP area = alt(
      {seq({lit(u"("), rep(d, 2, 3), lit(u")"), opt(S(u" \u00A0"))}),
       seq({opt(plus_signs), opt(seq({rep(d, 2, 4), gap})), rep(d, 2, 4), gap})});
  const PtbReP dotted = seq(
      {opt(seq({opt(plus_signs), rep(d, 2, 4), lit(u".")})), rep(d, 2, 4), lit(u"."), rep(d, 3, 4), lit(u"."),
       rep(d, 3, 5)});
  return alt({seq({area, rep(d, 3, 4), opt(gap), rep(d, 3, 5)}), dotted});
}

PtbReP make_asian_smiley() {
  const PtbReP eye = S(u"-^x=~<>'");
  // The flex file's first alternative escapes its second '[', so it reads ".[^x=~<>]" literally.
  return alt(
      {seq({S(u"^x=~<>"), lit(u".[^x=~<>]")}), seq({eye, lit(u"_"), eye}),
       seq({lit(u"("), eye, opt(S(u"_.")), eye, lit(u")")}),
       seq({lit(u"("), S(u"^x=~<>'"), lit(u"-"), S(u"^x=~<>'`"), lit(u")")})});
}

// Rules from c++ to DOLSIGN2, in the flex file's order.
void add_word_rules(const Macros& m, std::vector<Rule>& rules) {
  const PtbReP digits14 = rep(m.digit, 1, 4);
  rules.push_back(plain(lit(u"c++")));
  rules.push_back(plain(seq({S(u"cCfF"), lit(u"#")})));
  rules.push_back(pushback(lit(u"cannot"), 3));
  rules.push_back(pushback(lit(u"'twas"), 3));
  rules.push_back(pushback(lit(u"'tis"), 2));
  rules.push_back(pushback(lits({u"gonna", u"gotta", u"lemme", u"gimme", u"wanna"}), 2));
  rules.push_back(plain(m.sgml, Act::kNbsp));
  rules.push_back(
      replace(alt({lits({u"&MD;", u"&mdash;", u"&ndash;"}), S(u"\u0096\u0097\u2013\u2014\u2015")}), u"--"));
  rules.push_back(plain(m.spamp, Act::kAmp));
  rules.push_back(plain(seq(
      {lit(u"&"),
       alt(
           {lits({u"HT", u"TL", u"UR", u"LR", u"QC", u"QL", u"QR", u"odq", u"cdq"}),
            seq({lit(u"#"), plus(S(u"0-9"))})}),
       lit(u";")})));
  rules.push_back(context(m.word, m.redaux, Act::kNoSoftHyphen));
  rules.push_back(context(
      seq({star(S(u"A-Za-z\u00AD")), S(u"A-MO-Za-mo-z"), star(S(u"\u00AD"))}), m.sredaux,
      Act::kNoSoftHyphen));
  rules.push_back(plain(m.word, Act::kNoSoftHyphen));
  rules.push_back(plain(make_apoword(m)));
  rules.push_back(context(seq({lit(u"y"), m.apos}), m.jletter));
  rules.push_back(plain(make_full_url()));
  rules.push_back(plain(make_likely_url()));
  rules.push_back(plain(make_email()));
  rules.push_back(plain(
      alt({seq({lit(u"@"), S(u"a-zA-Z_"), star(S(u"a-zA-Z_0-9"))}), seq({lit(u"#"), plus(m.letter)})})));
  rules.push_back(quote(m.redaux, not_in(u"A-Za-z"), false));
  rules.push_back(quote(m.sredaux, not_in(u"A-Za-z"), false));
  rules.push_back(
      plain(seq({rep(m.digit, 1, 2), S(u"/-"), rep(m.digit, 1, 2), S(u"/-"), rep(m.digit, 2, 4)})));
  const PtbReP num =
      alt({plus(m.digit), seq({star(m.digit), plus(seq({S(u".:,\u00AD\u066B\u066C"), plus(m.digit)}))})});
  rules.push_back(plain(seq({opt(S(u"+-")), num}), Act::kNoSoftHyphen));
  rules.push_back(plain(seq(
      {opt(S(u"\u207A\u207B\u208A\u208B")),
       alt({plus(S(u"\u2070\u00B9\u00B2\u00B3\u2074-\u2079")), plus(S(u"\u2080-\u2089"))})})));
  rules.push_back(plain(
      seq(
          {opt(seq({digits14, S(u"- \u00A0")})), digits14, alt({lits({u"/", u"\\/"}), lit(u"\u2044")}),
           digits14}),
      Act::kNbsp));
  rules.push_back(plain(S(u"\u00BC\u00BD\u00BE\u2153-\u215E"), Act::kFraction));
  rules.push_back(plain(
      alt(
          {seq({lit(u"-"), lits({u"RRB", u"LRB", u"RCB", u"LCB", u"RSB", u"LSB"}), lit(u"-")}),
           lits({u"C.D.s", u"pro-", u"anti-"}),
           seq({lit(u"S"), alt({lit(u"&"), m.spamp}), lits({u"P-500", u"Ls"})}),
           seq({lit(u"Cap"), m.apos, lit(u"n")}), seq({lit(u"c"), m.apos, lit(u"est")})}),
      Act::kAmp));
  const PtbReP thing3_part = seq({plus(S(u"A-Za-z0-9")), rep(seq({lit(u"-"), plus(S(u"A-Za-z"))}), 0, 2)});
  rules.push_back(plain(seq({thing3_part, rep(seq({opt(lit(u"\\")), lit(u"/"), thing3_part}), 1, 2)})));
  rules.push_back(plain(alt({seq({star(S(u"A-Z")), lit(u"$")}), lit(u"#")})));
  rules.push_back(plain(
      S(u"\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6"),
      Act::kCurrency));
}

// Rules from ACRONYM to the brackets.
void add_abbreviation_rules(const Macros& m, std::vector<Rule>& rules) {
  const PtbReP abbrev1 = make_abbrev1();
  const PtbReP abbrev4 = make_abbrev4(m);
  const PtbReP filename_ext = lits(
      {u"bat", u"bmp", u"c",    u"class", u"cgi",  u"cpp",  u"dll", u"doc", u"docx", u"exe", u"gif", u"gz",
       u"h",   u"htm", u"html", u"jar",   u"java", u"jpeg", u"jpg", u"mov", u"mp3",  u"pdf", u"php", u"pl",
       u"png", u"ppt", u"ps",   u"py",    u"sql",  u"tar",  u"txt", u"wav", u"x",    u"xml", u"zip"});
  const PtbReP sentend = seq({m.spacenl, alt({m.spacenl, set(with_bits(kPtbUpper)), m.sgml})});
  rules.push_back(context(seq({m.acro, lit(u".")}), make_sentence_starters(m), Act::kAcronym));
  rules.push_back(context(
      seq({lits({u"ca", u"fig", u"figs", u"prop", u"no", u"nos", u"art", u"bldg", u"pp", u"op"}), lit(u".")}),
      seq({opt(m.spacenl), set(with_bits(kPtbDigit))})));
  rules.push_back(context(
      seq({alt({seq({lit(u"pt"), S(u"eyEY")}), lit(u"co")}), lit(u".")}),
      seq({m.space, lits({u"ltd", u"lim"})})));
  rules.push_back(context(abbrev1, sentend, Act::kPeriodAgain));
  rules.push_back(context(abbrev1, seq({set(any_unit()), set(any_unit())})));
  rules.push_back(plain(abbrev1, Act::kPeriodAgain));
  rules.push_back(plain(seq({abbrev4, lit(u".")})));
  rules.push_back(context(abbrev4, m.space));
  rules.push_back(context(m.acro, m.spacenl));
  rules.push_back(context(seq({m.apos, S(u"0-9"), S(u"0-9")}), m.spacenl));
  rules.push_back(context(
      seq({plus(m.letter_digit), star(seq({lit(u"."), plus(m.letter_digit)})), lit(u"."), filename_ext}),
      alt({m.spacenl, S(u".?!,")})));
  rules.push_back(context(seq({m.word, lit(u".")}), m.insentp, Act::kNoSoftHyphen));
  rules.push_back(plain(make_phone(), Act::kPhone));
  const PtbReP dblquot = lits({u"\"", u"&quot;"});
  rules.push_back(quote(dblquot, S(u"A-Za-z0-9$"), true));
  rules.push_back(quote(dblquot, nullptr, false));
  rules.push_back(plain(lit(u"\x7f"), Act::kSkip));
  rules.push_back(replace(lits({u"<", u"&lt;"}), u"<"));
  rules.push_back(replace(lits({u">", u"&gt;"}), u">"));
  rules.push_back(context(
      seq({opt(S(u"<>")), S(u":;="), opt(S(u"-o*'")), S(u"()DPdpO\\{@|[]")}), not_in(u"A-Za-z0-9"),
      Act::kParens));
  rules.push_back(plain(make_asian_smiley(), Act::kParens));
  rules.push_back(replace(lit(u"{"), u"-LCB-"));
  rules.push_back(replace(lit(u"}"), u"-RCB-"));
  rules.push_back(replace(lit(u"["), u"-LSB-"));
  rules.push_back(replace(lit(u"]"), u"-RSB-"));
  rules.push_back(replace(lit(u"("), u"-LRB-"));
  rules.push_back(replace(lit(u")"), u"-RRB-"));
}

// Rules from HYPHENS to the catch-all.
void add_punctuation_rules(const Macros& m, std::vector<Rule>& rules) {
  rules.push_back(plain(plus(lit(u"-")), Act::kHyphens));
  rules.push_back(replace(
      alt(
          {rep(lit(u"."), 3, 5), seq({rep(seq({lit(u"."), S(u" \u00A0")}), 2, 4), lit(u".")}),
           S(u"\u0085\u2026")}),
      u"..."));
  rules.push_back(plain(alt({plus(lit(u"@")), plus(lit(u"#")), plus(lit(u"_"))})));
  rules.push_back(plain(alt({plus(lit(u"*")), rep(lit(u"\\*"), 1, 3)})));
  rules.push_back(plain(m.insentp));
  rules.push_back(plain(plus(S(u"?!"))));
  rules.push_back(plain(S(u".\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002")));
  rules.push_back(plain(lit(u"=")));
  rules.push_back(plain(lit(u"/")));
  rules.push_back(context(seq({m.hthing, lit(u".")}), m.insentp, Act::kNoSoftHyphen));
  rules.push_back(plain(m.hthing, Act::kNoSoftHyphen));
  rules.push_back(context(seq({m.thing, lit(u".")}), m.insentp));
  rules.push_back(plain(m.thing));
  rules.push_back(context(seq({m.thinga, lit(u".")}), m.insentp, Act::kAmp));
  rules.push_back(plain(m.thinga, Act::kAmp));
  rules.push_back(quote(lit(u"'"), seq({S(u"A-Za-z"), not_in(u" \t\n\r\u00A0")}), true));
  rules.push_back(quote(m.redaux, nullptr, false));
  rules.push_back(quote(m.sredaux, nullptr, false));
  rules.push_back(quote(
      alt(
          {m.apos, lit(u"''"),
           rep(S(u"`\u2018\u2019\u201A\u201B\u201C\u201D\u0091\u0092\u0093\u0094\u201E\u201F\u2039\u203A"
                 u"\u00AB\u00BB"),
               1, 2)}),
      nullptr, false));
  rules.push_back(plain(lits({u"<<", u">>"})));
  rules.push_back(plain(S(kMiscSymbols)));
  rules.push_back(plain(
      alt({set(chars(std::u16string_view(u"\0\u200B\u200E\u200F\uFEFF", 5))), plus(m.space)}), Act::kSkip));
  rules.push_back(plain(m.newline, Act::kSkip));
  rules.push_back(plain(lit(u"&nbsp;"), Act::kSkip));
  rules.push_back(plain(not_in(u"\n"), Act::kSkip));
}

std::u16string replace_all(std::u16string text, std::u16string_view from, std::u16string_view to) {
  for (size_t at = text.find(from); at != std::u16string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Replaces each unit of `from` by the text at the same index of `to`.
std::u16string map_units(
    std::u16string_view text, std::u16string_view from, std::initializer_list<std::u16string_view> to) {
  std::u16string out;
  for (const char16_t unit : text) {
    const size_t at = from.find(unit);
    if (at == std::u16string_view::npos) {
      out += unit;
    } else {
      out += *(to.begin() + at);
    }
  }
  return out;
}

std::u16string without_soft_hyphens(std::u16string_view text) {
  std::u16string out = map_units(text, u"\u00AD", {u""});
  return out.empty() ? u"-" : out;
}

std::u16string ampersand(std::u16string_view text) {
  std::u16string out(text);
  for (size_t at = 0; (at = out.find(u'&', at)) != std::u16string::npos; ++at) {
    if (at + 5 <= out.size() && (out[at + 1] | 0x20) == u'a' && (out[at + 2] | 0x20) == u'm' &&
        (out[at + 3] | 0x20) == u'p' && out[at + 4] == u';') {
      out.erase(at + 1, 4);
    }
  }
  return out;
}

// latexQuotes: ASCII quotes by their guessed side, the curly and angle ones by their own.
std::u16string ptb_quotes(std::u16string_view text, bool left) {
  std::u16string out = replace_all(replace_all(std::u16string(text), u"&apos;", u"'"), u"&quot;", u"\"");
  out = map_units(out, u"'\"", {left ? u"`" : u"'", left ? u"``" : u"''"});
  return map_units(
      out, u"\u0091\u2018\u201B\u2039\u0092\u2019\u203A\u0093\u201C\u00AB\u0094\u201D\u00BB",
      {u"`", u"`", u"`", u"`", u"'", u"'", u"'", u"``", u"``", u"``", u"''", u"''", u"''"});
}

std::u16string parens(std::u16string_view text) {
  return map_units(text, u"()", {u"-LRB-", u"-RRB-"});
}

class PtbLexer {
 public:
  PtbLexer() {
    const Macros macros = make_macros();
    add_word_rules(macros, rules_);
    add_abbreviation_rules(macros, rules_);
    add_punctuation_rules(macros, rules_);
    for (Rule& rule : rules_) {
      if (rule.trail == nullptr) {
        scanner_.add(rule.pattern);
        continue;
      }
      scanner_.add(seq({rule.pattern, rule.trail}));
      head_rule_.push_back(parts_.add(rule.pattern));
      trail_rule_.push_back(parts_.add(rule.trail));
      rule.parts = static_cast<int>(head_rule_.size()) - 1;
    }
  }

  std::vector<PtbToken> lex(std::u16string_view text) {
    std::vector<PtbToken> tokens;
    std::vector<std::u16string> emitted;
    for (size_t pos = 0; pos < text.size();) {
      const PtbNfa::Match match = scanner_.longest(text, pos);
      const Rule& rule = rules_[match.rule];
      const size_t end = rule.trail == nullptr ? match.end : head_end(rule, text, pos, match.end);
      const size_t next = act(rule, text.substr(pos, end - pos), pos, emitted);
      for (std::u16string& token : emitted) tokens.push_back({std::move(token), pos});
      emitted.clear();
      pos = next;
    }
    return tokens;
  }

 private:
  // The end of the longest head of `rule` whose remainder up to `end` is its trailing context.
  size_t head_end(const Rule& rule, std::u16string_view text, size_t begin, size_t end) {
    const std::vector<size_t> heads = parts_.ends(text, begin, end, head_rule_[rule.parts]);
    for (auto it = heads.rbegin(); it != heads.rend(); ++it) {
      const std::vector<size_t> trails = parts_.ends(text, *it, end, trail_rule_[rule.parts]);
      if (!trails.empty() && trails.back() == end) return *it;
    }
    return end;  // unreachable: the scanner matched head and trail
  }

  // Emits the token(s) of `rule` for `text`, found at `begin`; returns where lexing goes on.
  static size_t act(
      const Rule& rule, std::u16string_view text, size_t begin, std::vector<std::u16string>& tokens) {
    const size_t end = begin + text.size();
    switch (rule.act) {
      case Act::kPlain:
        tokens.emplace_back(text);
        break;
      case Act::kPushback:
        tokens.emplace_back(text.substr(0, text.size() - rule.pushback));
        return end - rule.pushback;
      case Act::kNbsp:
        tokens.push_back(map_units(text, u" ", {u"\u00A0"}));
        break;
      case Act::kReplace:
        tokens.emplace_back(rule.replacement);
        break;
      case Act::kAmp:
        tokens.push_back(ampersand(text));
        break;
      case Act::kNoSoftHyphen:
        tokens.push_back(without_soft_hyphens(text));
        break;
      case Act::kQuote:
        tokens.push_back(ptb_quotes(text, rule.left));
        break;
      case Act::kFraction:
        tokens.push_back(
            map_units(text, u"\u00BC\u00BD\u00BE\u2153\u2154", {u"1/4", u"1/2", u"3/4", u"1/3", u"2/3"}));
        break;
      case Act::kCurrency:
        tokens.push_back(map_units(
            text, u"\u00A2\u00A3\u0080\u00A4\u20A0\u20AC", {u"cents", u"#", u"$", u"$", u"$", u"$"}));
        break;
      case Act::kAcronym:
        if (text.size() == 2) {
          tokens.emplace_back(text.substr(0, 1));
          return end - 1;
        }
        tokens.emplace_back(text);
        return end - 1;
      case Act::kPeriodAgain:
        tokens.emplace_back(text);
        return end - 1;
      case Act::kPhone:
        tokens.push_back(parens(map_units(text, u" ", {u"\u00A0"})));
        break;
      case Act::kParens:
        tokens.push_back(parens(text));
        break;
      case Act::kHyphens:
        tokens.emplace_back(text.size() == 3 || text.size() == 4 ? u"--" : text);
        break;
      case Act::kSkip:
        break;
    }
    return end;
  }

  std::vector<Rule> rules_;
  PtbNfa scanner_;
  PtbNfa parts_;  // the heads and trailing contexts of the context rules, to split their matches
  std::vector<int> head_rule_;
  std::vector<int> trail_rule_;
};

}  // namespace

std::vector<PtbToken> ptb_lex(std::u16string_view text) {
  // The lazily built automata grow as they meet new text, so each thread keeps its own.
  thread_local PtbLexer lexer;
  return lexer.lex(text);
}

}  // namespace saccade
