"""Real sentences in the languages whose legacy encodings deckhand must read, with those encodings.

Each entry is (language, text, legacy encodings). The tests encode the text with
``str.encode`` (no binary fixtures) and assert that deckhand decodes it back exactly.
"""

from __future__ import annotations

#: A few natural sentences per language (written for these tests).
PARAGRAPHS: dict[str, str] = {
    "french": (
        "À côté de la forêt, les élèves ont découvert une vieille maison abandonnée. "
        "Le garçon a hésité avant d'entrer, mais sa sœur était déjà à l'intérieur. "
        "Ils ont trouvé des lettres écrites à la main, pleines de souvenirs d'été."
    ),
    "german": (
        "Die Straße vor unserem Haus wird nächste Woche erneuert. "
        "Während der Bauarbeiten müssen alle Fahrzeuge über die Brücke im Süden fahren. "
        "Die Bürger können sich bei Fragen an das Rathaus wenden."
    ),
    "spanish": (
        "El niño pequeño comió una manzana en el jardín de su abuela. "
        "¿Sabías que la canción más famosa del pueblo tiene más de cien años? "
        "Mañana iremos todos juntos a la montaña si no llueve."
    ),
    "portuguese": (
        "A educação é fundamental para o desenvolvimento de uma nação. "
        "As crianças aprenderão a ler e a escrever com atenção e paciência. "
        "Não há razão para esperar: a votação começa amanhã às nove horas."
    ),
    "polish": (
        "Wczoraj wieczorem poszliśmy na spacer nad rzekę. "
        "Dzieci bawiły się na łące, a ptaki śpiewały głośno w gałęziach drzew. "
        "Zażółć gęślą jaźń to zdanie, które zawiera wszystkie polskie litery."
    ),
    "czech": (
        "Příliš žluťoučký kůň úpěl ďábelské ódy. "
        "Včera jsme byli v kině a potom jsme šli na večeři do malé restaurace. "
        "Čeština má mnoho háčků a čárek, které mění výslovnost."
    ),
    "russian": (
        "Вчера вечером мы гуляли по старому парку и разговаривали о книгах. "
        "Погода была тёплой, и на скамейках сидели пожилые люди. "
        "Завтра мы поедем за город, если не будет дождя."
    ),
    "greek": (
        "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και μία από τις αρχαιότερες πόλεις του κόσμου. "
        "Κάθε καλοκαίρι χιλιάδες επισκέπτες έρχονται για να δουν την Ακρόπολη. "
        "Το φαγητό εδώ είναι νόστιμο και οι άνθρωποι φιλόξενοι."
    ),
    "turkish": (
        "Bugün hava çok güzel, çocuklar bahçede oynuyor. "
        "Öğretmenimiz yarın sınav olacağını söyledi ve herkes çalışmaya başladı. "
        "İstanbul'un tarihi sokaklarında yürümek insana huzur veriyor."
    ),
    "japanese": (
        "今日はとても良い天気なので、公園へ散歩に行きました。"
        "桜の花が咲いていて、たくさんの人が写真を撮っていました。"
        "明日は友達と一緒に図書館で勉強する予定です。"
    ),
    "chinese_simplified": (
        "今天天气很好，我们一起去公园散步。"
        "公园里有很多人在锻炼身体，孩子们在草地上玩耍。"
        "明天我打算去图书馆借几本关于历史的书。"
    ),
    "chinese_traditional": (
        "今天天氣很好，我們一起去公園散步。"
        "公園裡有很多人在鍛鍊身體，孩子們在草地上玩耍。"
        "明天我打算去圖書館借幾本關於歷史的書。"
    ),
    "korean": (
        "오늘은 날씨가 정말 좋아서 친구와 함께 공원에 갔습니다. "
        "공원에는 많은 사람들이 산책을 하고 있었습니다. "
        "내일은 도서관에서 한국 역사에 관한 책을 읽을 예정입니다."
    ),
}

#: The legacy encodings each language is usually found in.
LEGACY: dict[str, tuple[str, ...]] = {
    "french": ("cp1252", "iso-8859-15"),
    "german": ("cp1252", "latin-1"),
    "spanish": ("cp1252", "latin-1"),
    "portuguese": ("cp1252", "latin-1"),
    "polish": ("cp1250", "iso-8859-2"),
    "czech": ("cp1250", "iso-8859-2"),
    "russian": ("cp1251", "koi8-r"),
    "greek": ("cp1253", "iso-8859-7"),
    "turkish": ("cp1254", "iso-8859-9"),
    "japanese": ("shift_jis", "euc-jp"),
    "chinese_simplified": ("gb18030", "gb2312"),
    "chinese_traditional": ("big5",),
    "korean": ("euc-kr", "cp949"),
}

#: The Unicode forms every language is also tried in (the BOM forms are written by Python's codecs).
UNICODE_FORMS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be")

#: A few words each: (language, text, encoding, the runner-up when the detector cannot be sure).
#: Short texts can be read several ways (a lone "è" is "č" in cp1250); the right text must still
#: come out, and where another code page would give a different but equally plausible text the
#: detector says so (one warning naming the encoding chosen).
SHORT: list[tuple[str, str, str, str | None]] = [
    ("french", "Café crème", "cp1252", "cp1250"),
    ("french", "Il était une fois, à côté de la forêt, un garçon très âgé.", "cp1252", None),
    ("german", "Grüße aus München", "cp1252", None),
    ("german", "Schöne Grüße", "latin-1", None),
    ("spanish", "¿Dónde está la estación?", "cp1252", "cp1250"),
    ("portuguese", "Não há pão.", "cp1252", "cp1250"),
    ("polish", "Dzień dobry, proszę.", "cp1250", "cp1257"),
    ("polish", "Dzień dobry, proszę.", "iso-8859-2", "cp1257"),
    ("czech", "Dobrý den, děkuji.", "cp1250", "cp1252"),
    ("czech", "Dobrý den, děkuji.", "iso-8859-2", "cp1252"),
    ("russian", "Доброе утро!", "cp1251", "cp1253"),
    ("russian", "Спасибо за помощь.", "koi8-r", None),
    ("greek", "Καλημέρα σας", "cp1253", "cp1251"),
    ("greek", "Καλημέρα σας", "iso-8859-7", "cp1251"),
    ("turkish", "Günaydın, nasılsın?", "cp1254", "cp1252"),
    ("turkish", "Günaydın, nasılsın?", "iso-8859-9", "cp1252"),
    ("japanese", "ありがとうございます。", "shift_jis", None),
    ("japanese", "ありがとうございます。", "euc-jp", None),
    ("japanese", "東京駅で会いましょう。", "shift_jis", None),
    ("chinese_simplified", "谢谢你的帮助。", "gb18030", "euc_jp"),
    ("chinese_traditional", "謝謝你的幫助。", "big5", None),
    ("korean", "감사합니다.", "euc-kr", "gb18030"),
    ("korean", "안녕하세요, 반갑습니다.", "cp949", "gb18030"),
    # the one line of the issue that was stored as "Café crčme brūlée: the naļve gāteau"
    ("french", "Café crème brûlée: the naïve gâteau ... déjà vu", "latin-1", None),
]
