"""Committed synthetic texts in several scripts, for bm25's analyser tests.

Each entry is a sentence a user might keep in a note, written for these tests
(no real corpus): Latin with accents, Greek with tonos, Cyrillic, Chinese,
Japanese (kana and kanji), Korean, Arabic, emoji, decomposed (NFD) accents and
fullwidth letters.
"""

from __future__ import annotations

TEXTS: dict[str, str] = {
    "latin": "The café in Zürich serves a naïve crème brûlée; Ørsted and Łódź sit on the map.",
    "greek": "Ο πελαργός πετά πάνω από την Αθήνα το φθινόπωρο.",
    "cyrillic": "Серый журавль летит над йодным озером, а не над иодным.",
    "chinese": "丹顶鹤生活在中国东北的湿地，冬天飞往南方。",
    "japanese": "タンチョウは北海道の湿原に住む鶴です。ガラス越しに見た。",
    "korean": "두루미는 겨울에 한국의 철원 평야로 날아온다.",
    "arabic": "طائر اللقلق يهاجر إلى أفريقيا في الخريف.",
    "emoji": "Owls 🦉 hunt at night 🌙 and sleep by day☀️.",
    "nfd": "Cafe\u0301 au lait and re\u0301sume\u0301 notes, written decomposed.",
    "fullwidth": "Ｆｕｌｌｗｉｄｔｈ ＡＳＣＩＩ letters and ｶﾀｶﾅ in halfwidth.",
}
