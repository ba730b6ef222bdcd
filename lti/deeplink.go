package lti

import (
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// ContentItem is one ltiResourceLink the tool places in the course (Deep
// Linking 2.0 §3.1 and §3.2).
type ContentItem struct {
	Title string
	Text  string
	// URL is the launch URL the platform stores for the link; its launches
	// carry it as target_link_uri.
	URL string
	// Custom parameters come back in every launch of the link (the lesson
	// or question it targets, so a changed URL scheme cannot lose them).
	Custom map[string]string
	// LineItem, when set, asks the platform to make a gradebook column
	// for the link; its launches then carry the AGS lineitem URL.
	LineItem *LineItem
}

// LineItem is a gradebook column (AGS §3.2).
type LineItem struct {
	ScoreMaximum float64 `json:"scoreMaximum"`
	Label        string  `json:"label"`
	ResourceID   string  `json:"resourceId,omitempty"`
	Tag          string  `json:"tag,omitempty"`
}

type contentItemJSON struct {
	Type     string            `json:"type"`
	Title    string            `json:"title,omitempty"`
	Text     string            `json:"text,omitempty"`
	URL      string            `json:"url,omitempty"`
	Custom   map[string]string `json:"custom,omitempty"`
	LineItem *LineItem         `json:"lineItem,omitempty"`
}

type deepLinkResponse struct {
	jwt.Claims
	Nonce        string            `json:"nonce"`
	MessageType  string            `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version      string            `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	DeploymentID string            `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	Items        []contentItemJSON `json:"https://purl.imsglobal.org/spec/lti-dl/claim/content_items"`
	Data         string            `json:"https://purl.imsglobal.org/spec/lti-dl/claim/data,omitempty"`
	Message      string            `json:"https://purl.imsglobal.org/spec/lti-dl/claim/msg,omitempty"`
}

// DeepLinkResponse signs the LtiDeepLinkingResponse JWT (DL §4.5) that the
// browser posts, as form field JWT, to settings.ReturnURL: iss is our
// client id, aud the platform's issuer, the request's data echoed, and
// the chosen items. msg is shown by the platform ("" for none).
func (t *Tool) DeepLinkResponse(l *Launch, items []ContentItem, msg string) (string, error) {
	t.init()
	now := t.Now()
	resp := deepLinkResponse{
		Claims: jwt.Claims{
			Issuer: l.Platform.ClientID, Audience: jwt.Audience{l.Platform.Issuer},
			IssuedAt: numericDate(now), Expiry: numericDate(now.Add(5 * time.Minute)), ID: randomID(),
		},
		Nonce: randomID(), MessageType: MsgDeepLinkResponse, Version: Version,
		DeploymentID: l.DeploymentID, Message: msg,
	}
	if l.DeepLink != nil {
		resp.Data = l.DeepLink.Data
	}
	for _, it := range items {
		resp.Items = append(resp.Items, contentItemJSON{Type: "ltiResourceLink", Title: it.Title, Text: it.Text,
			URL: it.URL, Custom: it.Custom, LineItem: it.LineItem})
	}
	return t.sign(resp)
}

// AcceptsLineItem reports whether the platform takes a lineItem in a
// content item (absent means yes: DL §4.4.1 makes it optional).
func (s *DeepLinkSettings) AcceptsLineItem() bool {
	return s.AcceptLineItem == nil || *s.AcceptLineItem
}
