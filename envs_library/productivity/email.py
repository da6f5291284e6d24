"""Email: the user's mailbox."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import get_or_404, next_id, page, search, update
from compoenv.roles import Role
from compoenv.interfaces import EmailAddress, EmailMessage, EmailSubject, MessageId, Text
from compoenv.service import did_you_mean
from compoenv.world import World

# (subject, body) pools; {first} is the sender's first name, {org} their employer.
_TOPICS = (
    ("Quarterly report draft", "Hi, the draft of the quarterly report is attached. Comments "
                               "welcome before Friday. Best, {first}"),
    ("Lunch next week?", "Are you free for lunch one day next week? I'd love to catch up. {first}"),
    ("Budget review", "Can we go through the {org} budget numbers together? {first}"),
    ("Project kickoff", "Kickoff for the new project is coming up; agenda to follow. {first}"),
    ("Contract renewal", "Our contract with {org} is up for renewal. Could you confirm the "
                         "terms? Regards, {first}"),
    ("Travel plans", "I'm sorting out travel for the conference. Which dates work for you? "
                     "{first}"),
    ("Hiring update", "Two candidates passed the final round. Let's decide this week. {first}"),
    ("Design feedback", "I left feedback on the latest mockups; let me know what you think. "
                        "{first}"),
    ("Invoice question", "One line on the last {org} invoice looks off. Could you check it? "
                         "{first}"),
    ("Team offsite", "We're planning the team offsite. Please send your preferences. {first}"),
    ("Weekend plans", "Any plans for the weekend? A few of us are going hiking. {first}"),
    ("Meeting notes", "Here are my notes from today's meeting with {org}. {first}"),
)
_SENT = (
    ("Follow-up", "Thanks for your time today. Following up on what we discussed."),
    ("Documents", "Please find the documents we talked about attached."),
    ("Quick question", "Do you have a minute this week for a quick question?"),
)


class Email(Service):
    """The user's mailbox: read, search, send, reply to and archive email messages."""

    name = "email"
    display = "my email"
    domain = "productivity"
    related = ("*",)

    class State(State):
        messages: dict[str, EmailMessage] = {}

    def seed(self, world: World) -> Email.State:
        rng = world.rng(self.name)
        me = world.user
        circle = world.circle(rng, 20)
        drafts = []
        for _ in range(40):
            p = rng.choice(circle)
            subject, body = rng.choice(_TOPICS)
            when = (-rng.randrange(1, 22), rng.randrange(7, 20), rng.choice((0, 15, 30, 45)))
            archived, glanced = rng.random() < 0.15, rng.random() < 0.3
            drafts.append((when, dict(
                sender=p.email, to=[me.email], subject=subject,
                body=body.format(first=p.first, org=p.employer), sent_at=world.at(*when),
                folder="archive" if archived else "inbox",
                read=archived or glanced or when[0] < -4)))
        for _ in range(5):
            p = rng.choice(circle)
            subject, body = rng.choice(_SENT)
            when = (-rng.randrange(1, 22), rng.randrange(8, 18), rng.choice((0, 30)))
            drafts.append((when, dict(
                sender=me.email, to=[p.email], subject=subject,
                body=f"Hi {p.first}, {body} Best, {me.first}", sent_at=world.at(*when),
                folder="sent", read=True)))
        drafts.sort(key=lambda d: d[0])  # ids follow time: M-0001 is the oldest
        messages = {f"M-{i:04d}": EmailMessage(id=f"M-{i:04d}", **fields)
                    for i, (_, fields) in enumerate(drafts, start=1)}
        return self.State(messages=messages)

    def _newest_first(self, messages: list[EmailMessage]) -> list[EmailMessage]:
        return sorted(messages, key=lambda m: (m.sent_at, m.id), reverse=True)

    @tool(read_only=True, phrase="list the messages in my inbox")
    def list_inbox(self, unread_only: bool = False,
                   limit: Annotated[int, Field(ge=1, le=100)] = 20) -> list[EmailMessage]:
        """List inbox messages, newest first.

        Args:
            unread_only: Only messages not yet marked read.
            limit: Maximum number of messages to return.
        """
        inbox = [m for m in self.state.messages.values()
                 if m.folder == "inbox" and not (unread_only and m.read)]
        return page(self._newest_first(inbox), limit)

    @tool(read_only=True, phrase="open email {message_id}")
    def get_message(self, message_id: MessageId) -> EmailMessage:
        """Get a message by id."""
        return get_or_404(self.state.messages, message_id, "message id")

    @tool(read_only=True, phrase="search my email for {query}")
    def search_messages(
        self,
        query: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> list[EmailMessage]:
        """Search all folders by subject, body or sender, newest first.

        Args:
            query: Words that must all appear in the subject, body or sender address.
        """
        hits = search(self.state.messages.values(), query,
                      lambda m: m.subject, lambda m: m.body, lambda m: m.sender)
        return self._newest_first(hits)

    @tool(read_only=True, phrase="list the emails I received from {sender}")
    def list_messages_from(self, sender: Annotated[EmailAddress, Role("contact")]) -> list[EmailMessage]:
        """List every message from a sender, newest first."""
        return self._newest_first([m for m in self.state.messages.values()
                                   if m.sender.lower() == sender.lower()])

    @tool(read_only=True, phrase="find the latest email from {sender}")
    def latest_message_from(self, sender: Annotated[EmailAddress, Role("contact")]) -> EmailMessage:
        """Get the most recent message from a sender."""
        hits = self.list_messages_from(sender)
        if not hits:
            senders = {m.sender for m in self.state.messages.values()}
            raise ToolError(404, did_you_mean(sender, senders, "sender"))
        return hits[0]

    @tool(phrase="send an email to {to} with subject {subject} and body {body}")
    def send_email(self, to: Annotated[EmailAddress, Role("recipient")], subject: EmailSubject,
                   body: Text) -> EmailMessage:
        """Send a new email from the user's address."""
        msg = EmailMessage(id=next_id("M-", self.state.messages, salt=(
                               self.world.seed, self.name, to)), sender=self.world.user.email,
                           to=[to], subject=subject, body=body, sent_at=self.world.at(0, 9),
                           folder="sent", read=True)
        self.state.messages[msg.id] = msg
        return msg

    @tool(phrase="reply to email {message_id} saying {body}")
    def reply(self, message_id: MessageId, body: Text) -> EmailMessage:
        """Reply to a message; the reply goes to its sender (or, for sent mail, its recipients)."""
        original = get_or_404(self.state.messages, message_id, "message id")
        me = self.world.user.email
        to = original.to if original.sender == me else [original.sender]
        subject = original.subject if original.subject.startswith("Re: ") else \
            f"Re: {original.subject}"
        msg = EmailMessage(id=next_id("M-", self.state.messages, salt=(
                               self.world.seed, self.name, message_id)), sender=me, to=list(to),
                           subject=subject[:200], body=body, sent_at=self.world.at(0, 9),
                           folder="sent", read=True)
        self.state.messages[msg.id] = msg
        return msg

    @tool(phrase="archive email {message_id}")
    def archive_message(self, message_id: MessageId) -> EmailMessage:
        """Move a message to the archive folder."""
        msg = get_or_404(self.state.messages, message_id, "message id")
        if msg.folder == "archive":
            raise ToolError(409, f"Message {message_id} is already archived")
        return update(self.state.messages, message_id, folder="archive")

    @tool(phrase="mark email {message_id} as read")
    def mark_read(self, message_id: MessageId) -> EmailMessage:
        """Mark a message as read (no change if it already is)."""
        get_or_404(self.state.messages, message_id, "message id")
        return update(self.state.messages, message_id, read=True)
