package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/version"
)

// The identities of the cluster: a static token each (--token-auth-file). The admin is in
// system:masters; the controller-manager and the scheduler get the RBAC roles the API server
// bootstraps for their user names.
var identities = []struct{ file, user, groups string }{
	{"admin", "titanium-admin", "system:masters"},
	{"kube-controller-manager", "system:kube-controller-manager", ""},
	{"kube-scheduler", "system:kube-scheduler", ""},
}

// runInit writes, into DIR: pki/ (a CA, the API server's serving certificate for the node
// address, loopback and the in-cluster names, the front proxy's client certificate, the
// service-account signing key pair),
// tokens.csv and one kubeconfig per identity (<name>.kubeconfig) for https://SERVER.
func runInit(args []string) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	server := fs.String("server", "198.18.0.1:6443", "API server address the kubeconfigs point at")
	serviceIP := fs.String("service-ip", "198.19.0.1", "the kubernetes Service's cluster IP (in the certificate)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kube init [--server HOST:PORT] DIR")
		return 2
	}
	if err := writeInit(fs.Arg(0), *server, *serviceIP); err != nil {
		fmt.Fprintf(os.Stderr, "kube init: %v\n", err)
		return 1
	}
	return 0
}

func writeInit(dir, server, serviceIP string) error {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(server)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	caKey, caCert, caPEM, err := newCA()
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pki, "ca.key"), caKey); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "ca.crt"), caPEM, 0o644); err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP(host), net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local"}
	srvKey, srvPEM, err := newCert(caKey, caCert, "kube-apiserver", ips, dns, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pki, "apiserver.key"), srvKey); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "apiserver.crt"), srvPEM, 0o644); err != nil {
		return err
	}
	// The aggregation layer's client certificate (--proxy-client-cert-file) and, through
	// --requestheader-client-ca-file, the CA that components check it against.
	proxyKey, proxyPEM, err := newCert(caKey, caCert, "front-proxy-client", nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pki, "front-proxy-client.key"), proxyKey); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "front-proxy-client.crt"), proxyPEM, 0o644); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pki, "sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return err
	}

	var tokens strings.Builder
	for _, id := range identities {
		tok, err := randomHex(32)
		if err != nil {
			return err
		}
		fmt.Fprintf(&tokens, "%s,%s,%s,%q\n", tok, id.user, id.user, id.groups)
		if err := writeKubeconfig(filepath.Join(dir, id.file+".kubeconfig"), "https://"+server, caPEM, id.user, tok); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(tokens.String()), 0o600)
}

func writeKubeconfig(path, server string, ca []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["titanium"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["titanium"] = &clientcmdapi.Context{Cluster: "titanium", AuthInfo: user}
	cfg.CurrentContext = "titanium"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

func newCA() (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "titanium-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func newCert(caKey *ecdsa.PrivateKey, ca *x509.Certificate, cn string, ips []net.IP, dns []string,
	usage x509.ExtKeyUsage) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func versionString() string {
	v := version.Get()
	return fmt.Sprintf("%s (%s, %s)", v.GitVersion, v.GoVersion, v.Platform)
}
